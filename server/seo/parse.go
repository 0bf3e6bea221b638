package seo

import (
	"bytes"
	"encoding/csv"
	"errors"
	"fmt"
	"io"
	"math"
	"strconv"
	"strings"
	"unicode/utf8"

	"golang.org/x/text/encoding/unicode"

	"github.com/copydesk/copydesk/server/valid"
	"github.com/copydesk/copydesk/store"
)

// The keyword exports copydesk reads (POST /api/seo/keywords/import). Each
// is told by its encoding and its header, never by the file's name:
//
//   - Google Keyword Planner ("Keyword Stats ….csv"): UTF-16 with a byte
//     order mark, tab-separated, two title lines (the report's name and
//     its date range) before the header. Volumes are exact or, for an
//     account without spend, ranges like "1K – 10K".
//   - Ahrefs Keywords Explorer: UTF-8, or UTF-16 ("for Excel"), comma or
//     tab separated, with "#", "Keyword", "Country", "Difficulty",
//     "Volume", "CPC", …, "Parent Keyword", …, "Intents".
//   - Semrush Keyword Magic Tool: UTF-8, comma or semicolon separated
//     (semicolon files write decimals with a comma), with "Keyword",
//     "Intent", "Volume", "Trend", "Keyword Difficulty", "CPC (USD)", ….

// Formats, as the import names them (and source: import:<format>).
const (
	FormatGoogle  = "google_keyword_planner"
	FormatAhrefs  = "ahrefs"
	FormatSemrush = "semrush"
)

// Encodings the import reads.
const (
	EncodingUTF8    = "utf-8"
	EncodingUTF8BOM = "utf-8-bom"
	EncodingUTF16LE = "utf-16le"
	EncodingUTF16BE = "utf-16be"
)

// MaxImportBytes is the largest file an import takes.
const MaxImportBytes = 50 << 20

// MaxImportRows is the most keyword rows one import takes. An import is
// one transaction, and the writer is everyone's: 100,000 rows hold it for
// about 6 s on the 2-core machine (the 50,000-row benchmark, doubled),
// while 50 MiB of short rows would be some 300,000 and 15 s. The largest
// exports of the three tools come in under it; a bigger list is split.
const MaxImportRows = 100_000

// headerSearch is how many lines may come before the header (Keyword
// Planner has two).
const headerSearch = 10

// Parsed is a keyword file read and checked: the rows to write, in file
// order, and those refused, with their lines.
type Parsed struct {
	Format    string
	Encoding  string
	Delimiter string
	DataRows  int // rows after the header, blank lines left out
	Rows      []ParsedRow
	Rejected  []Rejection
}

// ParsedRow is a row to import and the line it starts on (from 1, title
// lines and header counted).
type ParsedRow struct {
	Line int
	store.ImportRow
}

// Rejection is a row left out, and why.
type Rejection struct {
	Line    int
	Keyword string // "" when the row has none
	Reason  string
}

// Parse reads a keyword export: its encoding, then its header, then every
// row. A file it cannot read as one of the formats is invalid (422) with
// the reason; a row it cannot take is a Rejection, and the others go on.
// Parse touches no database: an import parses before it writes.
func Parse(data []byte) (*Parsed, error) {
	if len(data) == 0 {
		return nil, store.Invalid("file: is empty")
	}
	text, enc, err := decode(data)
	if err != nil {
		return nil, err
	}
	head, err := findHeader(text)
	if err != nil {
		return nil, err
	}
	p := &Parsed{Format: head.format.name, Encoding: enc, Delimiter: delimiterName(head.delim)}
	r := csv.NewReader(strings.NewReader(text[head.offset:]))
	r.Comma, r.LazyQuotes, r.FieldsPerRecord, r.ReuseRecord = head.delim, true, -1, true
	if _, err := r.Read(); err != nil { // the header, read by findHeader already
		return nil, store.Invalid("file: the header cannot be read: %s", csvReason(err))
	}
	for {
		rec, err := r.Read()
		if err == io.EOF {
			break
		}
		if p.DataRows == MaxImportRows {
			return nil, store.Invalid("file: has more than %d keyword rows: split it and import the parts one after another", MaxImportRows)
		}
		line := head.line
		if err != nil {
			var pe *csv.ParseError
			if errors.As(err, &pe) {
				line += pe.StartLine - 1
			}
			p.DataRows++
			p.Rejected = append(p.Rejected, Rejection{Line: line, Reason: csvReason(err)})
			continue
		}
		start, _ := r.FieldPos(0)
		line += start - 1
		p.DataRows++
		row, kw, reason := head.row(rec)
		if reason != "" {
			p.Rejected = append(p.Rejected, Rejection{Line: line, Keyword: kw, Reason: reason})
			continue
		}
		p.Rows = append(p.Rows, ParsedRow{Line: line, ImportRow: row})
	}
	if p.DataRows == 0 {
		return nil, store.Invalid("file: has a %s header but no keyword rows", formatTitle(p.Format))
	}
	return p, nil
}

// decode turns the file into text: UTF-16 (little or big endian) with its
// byte order mark, or UTF-8 with or without one. Anything else is refused
// rather than guessed: a Windows code page read as UTF-8 would store
// mangled keywords.
func decode(data []byte) (string, string, error) {
	var dec func([]byte) ([]byte, error)
	enc := EncodingUTF8
	switch {
	case bytes.HasPrefix(data, []byte{0xEF, 0xBB, 0xBF}):
		data, enc = data[3:], EncodingUTF8BOM
	case bytes.HasPrefix(data, []byte{0xFF, 0xFE}):
		enc, dec = EncodingUTF16LE, unicode.UTF16(unicode.LittleEndian, unicode.ExpectBOM).NewDecoder().Bytes
	case bytes.HasPrefix(data, []byte{0xFE, 0xFF}):
		enc, dec = EncodingUTF16BE, unicode.UTF16(unicode.BigEndian, unicode.ExpectBOM).NewDecoder().Bytes
	}
	if dec != nil {
		if len(data)%2 != 0 {
			return "", "", store.Invalid("file: starts like %s but has an odd number of bytes: it is cut short or not UTF-16", encTitle(enc))
		}
		out, err := dec(data)
		if err != nil {
			return "", "", store.Invalid("file: cannot be read as %s: %s", encTitle(enc), err.Error())
		}
		data = out
	}
	if i := bytes.IndexByte(data, 0); i >= 0 {
		return "", "", store.Invalid("file: has NUL bytes: UTF-16 without a byte order mark? Export it as UTF-8, or as UTF-16 with its byte order mark")
	}
	if !utf8.Valid(data) {
		return "", "", store.Invalid("file: is not UTF-8, nor UTF-16 with a byte order mark; export it again as UTF-8 (CSV UTF-8 in Excel)")
	}
	return string(data), enc, nil
}

func encTitle(enc string) string {
	return map[string]string{EncodingUTF16LE: "UTF-16 little endian", EncodingUTF16BE: "UTF-16 big endian"}[enc]
}

func delimiterName(d rune) string {
	return map[rune]string{'\t': "tab", ',': "comma", ';': "semicolon"}[d]
}

// csvReason is a row's parse error in a user's words.
func csvReason(err error) string {
	var pe *csv.ParseError
	if errors.As(err, &pe) {
		if errors.Is(pe.Err, csv.ErrQuote) || errors.Is(pe.Err, csv.ErrBareQuote) {
			return "a quoted field is not closed"
		}
		return pe.Err.Error()
	}
	return err.Error()
}

// column is what one header cell holds.
type column int

const (
	colNone column = iota
	colKeyword
	colVolume
	colDifficulty
	colCPC
	colBidLow
	colBidHigh
	colCurrency
	colIntent
	colParent
)

// format is one tool's export: how to recognise its header, and what its
// columns mean.
type format struct {
	name     string
	currency string            // of the CPC column when the rows do not say
	columns  map[string]column // header cell, in lower case → meaning
}

var (
	googleFormat = &format{name: FormatGoogle, columns: map[string]column{
		"keyword": colKeyword, "avg. monthly searches": colVolume, "currency": colCurrency,
		"top of page bid (low range)": colBidLow, "top of page bid (high range)": colBidHigh,
	}}
	ahrefsFormat = &format{name: FormatAhrefs, currency: "USD", columns: map[string]column{
		"keyword": colKeyword, "volume": colVolume, "difficulty": colDifficulty, "kd": colDifficulty, "cpc": colCPC,
		"parent keyword": colParent, "parent topic": colParent, "intents": colIntent,
	}}
	semrushFormat = &format{name: FormatSemrush, columns: map[string]column{
		"keyword": colKeyword, "volume": colVolume, "keyword difficulty": colDifficulty, "keyword difficulty index": colDifficulty,
		"cpc": colCPC, "intent": colIntent, "intents": colIntent,
	}}
)

func formatTitle(name string) string {
	return map[string]string{FormatGoogle: "Google Keyword Planner", FormatAhrefs: "Ahrefs", FormatSemrush: "Semrush"}[name]
}

// header is a file's header, found: where the rows start and what each
// column holds.
type header struct {
	format   *format
	delim    rune
	offset   int // byte offset of the header line in the text
	line     int // its line number, from 1
	width    int // number of columns
	cols     []column
	currency string // the CPC column's, from its title ("CPC (USD)")
}

// findHeader looks for the header among the first lines: the first line
// that, split at a tab, comma or semicolon, has a cell "Keyword", and whose
// other cells tell a format.
func findHeader(text string) (*header, error) {
	offset := 0
	var first []string
	for n := 1; n <= headerSearch && offset < len(text); n++ {
		end := strings.IndexByte(text[offset:], '\n')
		lineText := text[offset:]
		if end >= 0 {
			lineText = text[offset : offset+end]
		}
		lineText = strings.TrimRight(lineText, "\r")
		if strings.TrimSpace(lineText) != "" && len(first) < 3 {
			first = append(first, lineText)
		}
		for _, d := range []rune{'\t', ';', ','} {
			cells, ok := splitLine(lineText, d)
			if !ok || !hasCell(cells, "keyword") {
				continue
			}
			h, err := classify(cells, d)
			if err != nil {
				return nil, err
			}
			h.offset, h.line = offset, n
			return h, nil
		}
		if end < 0 {
			break
		}
		offset += end + 1
	}
	return nil, store.Invalid("file: no header with a Keyword column in its first %d lines (it starts %q); "+
		"import the CSV export of Google Keyword Planner, Ahrefs Keywords Explorer or Semrush Keyword Magic Tool", headerSearch,
		truncate(strings.Join(first, " / "), 120))
}

func truncate(s string, n int) string {
	if utf8.RuneCountInString(s) <= n {
		return s
	}
	return string([]rune(s)[:n]) + "…"
}

// splitLine reads one line as a CSV record with delimiter d.
func splitLine(line string, d rune) ([]string, bool) {
	r := csv.NewReader(strings.NewReader(line))
	r.Comma, r.LazyQuotes, r.FieldsPerRecord = d, true, -1
	rec, err := r.Read()
	if err != nil || len(rec) < 2 {
		return nil, false
	}
	return rec, true
}

func cellName(c string) string {
	return strings.ToLower(strings.TrimSpace(strings.Trim(c, "\ufeff \"")))
}

func hasCell(cells []string, name string) bool {
	for _, c := range cells {
		if cellName(c) == name {
			return true
		}
	}
	return false
}

// classify tells the format from a header's cells: Keyword Planner by
// "Avg. monthly searches", Semrush by "Keyword Difficulty" or a "CPC (…)"
// with its currency, Ahrefs by "Difficulty" (or "KD") beside "Volume".
func classify(cells []string, d rune) (*header, error) {
	names := make([]string, len(cells))
	for i, c := range cells {
		names[i] = cellName(c)
	}
	has := func(n string) bool { return hasCell(cells, n) }
	h := &header{delim: d, width: len(cells), cols: make([]column, len(cells))}
	switch {
	case has("avg. monthly searches"):
		h.format = googleFormat
	case has("keyword difficulty") || has("keyword difficulty index") || hasPrefix(names, "cpc ("):
		h.format = semrushFormat
	case (has("difficulty") || has("kd")) && has("volume"):
		h.format = ahrefsFormat
	default:
		return nil, store.Invalid("file: the header (%s) is not one of Google Keyword Planner (Keyword, Avg. monthly searches, …), "+
			"Ahrefs (#, Keyword, Difficulty, Volume, …) or Semrush (Keyword, Intent, Volume, Keyword Difficulty, CPC (USD), …)",
			truncate(strings.Join(cells, ", "), 160))
	}
	h.currency = h.format.currency
	seen := map[column]bool{}
	for i, n := range names {
		col := h.format.columns[n]
		if cur, ok := strings.CutPrefix(n, "cpc ("); ok && h.format == semrushFormat {
			col, h.currency = colCPC, currency(strings.TrimSuffix(cur, ")"))
		}
		if col != colNone && !seen[col] { // the first of two alike counts
			h.cols[i], seen[col] = col, true
		}
	}
	if !seen[colVolume] {
		return nil, store.Invalid("file: the %s header has no volume column", formatTitle(h.format.name))
	}
	return h, nil
}

func hasPrefix(names []string, p string) bool {
	for _, n := range names {
		if strings.HasPrefix(n, p) {
			return true
		}
	}
	return false
}

// row reads one record into an import row, or says why not (with the
// keyword, when it has one).
func (h *header) row(rec []string) (store.ImportRow, string, string) {
	var out store.ImportRow
	kw := ""
	for i, col := range h.cols {
		if col == colKeyword && i < len(rec) {
			kw = strings.TrimSpace(rec[i])
		}
	}
	if len(rec) != h.width {
		for _, f := range rec {
			if strings.ContainsAny(f, "\r\n") { // lazy quotes read on to the end of the file
				return out, truncate(kw, 40), "a quoted field is not closed: it runs on over the lines after it"
			}
		}
		return out, kw, fmt.Sprintf("has %d fields where the header has %d", len(rec), h.width)
	}
	var low, high *float64
	for i, col := range h.cols {
		v := strings.TrimSpace(rec[i])
		var err error
		switch col {
		case colKeyword:
			out.Keyword, err = checkKeyword(v)
		case colVolume:
			out.SearchVolume, out.SearchVolumeHigh, err = parseVolume(v)
		case colDifficulty:
			out.Difficulty, err = parseDifficulty(v)
		case colCPC:
			out.CPC, err = h.money(v)
		case colBidLow:
			low, err = h.money(v)
		case colBidHigh:
			high, err = h.money(v)
		case colCurrency:
			out.Currency = currency(v)
		case colIntent:
			out.Intent = parseIntents(v)
		case colParent:
			out.ParentKeyword, err = checkText("parent keyword", v)
		}
		if err != nil {
			return out, kw, err.Error()
		}
	}
	if out.CPC == nil {
		out.CPC = bidCPC(low, high)
	}
	if out.Currency == "" && out.CPC != nil {
		out.Currency = h.currency
	}
	return out, kw, ""
}

// bidCPC is Keyword Planner's CPC: the middle of its top-of-page bid
// range, or the one end it gives.
func bidCPC(low, high *float64) *float64 {
	switch {
	case low != nil && high != nil:
		v := math.Round((*low+*high)/2*100) / 100
		return &v
	case low != nil:
		return low
	}
	return high
}

// checkKeyword is the one rule for a keyword, typed or imported.
func checkKeyword(v string) (string, error) {
	v = store.KeywordDisplay(v)
	if v == "" {
		return "", store.Invalid("keyword: is empty")
	}
	if err := valid.Line("keyword", v); err != nil {
		return "", err
	}
	return v, valid.MaxLen("keyword", v, maxKeyword)
}

// checkText is a short one-line text (cluster, parent keyword).
func checkText(field, v string) (string, error) {
	v = strings.TrimSpace(v)
	if err := valid.Line(field, v); err != nil {
		return "", err
	}
	return v, valid.MaxLen(field, v, maxKeyword)
}

// empty is how the tools write "no value".
func empty(v string) bool {
	switch strings.ToLower(v) {
	case "", "-", "–", "—", "n/a", "na", "null":
		return true
	}
	return false
}

// parseVolume reads a monthly volume: "2400", "1,300", "1.3K", or a range
// "1K – 10K" (en dash, hyphen or em dash), which gives its low and its high
// bound.
func parseVolume(v string) (low, high *int64, err error) {
	if empty(v) {
		return nil, nil, nil
	}
	for _, sep := range []string{"–", "—", " - ", "-"} {
		a, b, ok := strings.Cut(v, sep)
		if !ok {
			continue
		}
		lo, err1 := parseCount(a)
		hi, err2 := parseCount(b)
		if err1 != nil || err2 != nil || hi < lo {
			return nil, nil, fmt.Errorf("volume: %q is not a number or a range of numbers", v)
		}
		return &lo, &hi, nil
	}
	n, err := parseCount(v)
	if err != nil {
		return nil, nil, fmt.Errorf("volume: %q is not a number", v)
	}
	return &n, nil, nil
}

// parseCount reads a whole count with thousands separators or a K/M
// suffix.
func parseCount(v string) (int64, error) {
	v = strings.Map(func(r rune) rune {
		switch r {
		case ' ', '\u00a0', '\u202f', '\'':
			return -1
		}
		return r
	}, strings.TrimSpace(v))
	mult := 1.0
	switch {
	case strings.HasSuffix(v, "K") || strings.HasSuffix(v, "k"):
		mult, v = 1e3, v[:len(v)-1]
	case strings.HasSuffix(v, "M") || strings.HasSuffix(v, "m"):
		mult, v = 1e6, v[:len(v)-1]
	case strings.HasSuffix(v, "B") || strings.HasSuffix(v, "b"):
		mult, v = 1e9, v[:len(v)-1]
	}
	if mult == 1 {
		v = thousands.Replace(v)
	} else {
		v = strings.ReplaceAll(v, ",", ".") // 1,5K
	}
	f, err := strconv.ParseFloat(v, 64)
	if err != nil || f < 0 || math.IsInf(f, 0) || math.IsNaN(f) || f*mult > maxVolume {
		return 0, errors.New("not a count")
	}
	return int64(math.Round(f * mult)), nil
}

// thousands takes out the separators of thousands of a whole count.
var thousands = strings.NewReplacer(",", "", ".", "")

// parseDifficulty reads a difficulty from 0 to 100.
func parseDifficulty(v string) (*int64, error) {
	if empty(v) {
		return nil, nil
	}
	f, err := strconv.ParseFloat(strings.ReplaceAll(v, ",", "."), 64)
	if err != nil || math.IsNaN(f) || f < 0 || f > 100 {
		return nil, fmt.Errorf("difficulty: %q is not a number from 0 to 100", v)
	}
	d := int64(math.Round(f))
	return &d, nil
}

// money reads an amount: "1.25", "$1.25", "1,25" (a decimal comma, which
// semicolon files and a comma without three digits after it have),
// "1,250.50".
func (h *header) money(v string) (*float64, error) {
	if empty(v) {
		return nil, nil
	}
	s := strings.Map(func(r rune) rune {
		switch r {
		case ' ', '\u00a0', '\u202f', '$', '€', '£', '¥':
			return -1
		}
		return r
	}, v)
	dot, comma := strings.LastIndexByte(s, '.'), strings.LastIndexByte(s, ',')
	switch {
	case dot >= 0 && comma >= 0 && comma > dot: // 1.250,50
		s = strings.ReplaceAll(s, ".", "")
		s = strings.Replace(s, ",", ".", 1)
	case dot >= 0 && comma >= 0: // 1,250.50
		s = strings.ReplaceAll(s, ",", "")
	case comma >= 0 && (h.delim == ';' || len(s)-comma-1 != 3):
		s = strings.Replace(s, ",", ".", 1)
	case comma >= 0:
		s = strings.ReplaceAll(s, ",", "")
	}
	f, err := strconv.ParseFloat(s, 64)
	if err != nil || math.IsNaN(f) || math.IsInf(f, 0) || f < 0 || f > maxCPC {
		return nil, fmt.Errorf("cpc: %q is not an amount", v)
	}
	return &f, nil
}

// currency is an ISO 4217 code, or "" for anything else.
func currency(v string) string {
	v = strings.ToUpper(strings.TrimSpace(v))
	if len(v) != 3 {
		return ""
	}
	for _, r := range v {
		if r < 'A' || r > 'Z' {
			return ""
		}
	}
	return v
}

// intentWords are the ways the tools name intents: words, Semrush's
// letters, and the numbers of Semrush's API (0 commercial, 1
// informational, 2 navigational, 3 transactional), which some exports
// carry. Others (Ahrefs' "Branded", "Local") are no search intent and are
// left out.
var intentWords = map[string]string{
	"informational": "informational", "commercial": "commercial", "transactional": "transactional", "navigational": "navigational",
	"i": "informational", "c": "commercial", "t": "transactional", "n": "navigational",
	"0": "commercial", "1": "informational", "2": "navigational", "3": "transactional",
}

// parseIntents reads a list of intents ("Commercial, Transactional") as
// bits; 0 when it names none.
func parseIntents(v string) int {
	var names []string
	for _, w := range strings.FieldsFunc(strings.ToLower(v), func(r rune) bool { return r == ',' || r == ';' || r == '/' || r == '|' }) {
		if n, ok := intentWords[strings.TrimSpace(w)]; ok {
			names = append(names, n)
		}
	}
	bits, _ := store.IntentBits(names)
	return bits
}
