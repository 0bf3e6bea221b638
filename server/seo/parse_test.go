package seo_test

import (
	"strings"
	"testing"

	"github.com/copydesk/copydesk/server/seo"
	"github.com/copydesk/copydesk/server/seo/seotest"
	"github.com/copydesk/copydesk/store"
)

// want is what one parsed row must hold; nil and "" fields must be unset.
type want struct {
	line       int
	keyword    string
	volume     *int64
	high       *int64
	difficulty *int64
	cpc        *float64
	currency   string
	intent     []string
	parent     string
}

func i64(v int64) *int64            { return &v }
func f64(v float64) *float64        { return &v }
func ptr[T any](v T) *T             { return &v }
func eq[T comparable](a, b *T) bool { return (a == nil) == (b == nil) && (a == nil || *a == *b) }

func TestParseFormats(t *testing.T) {
	t.Parallel()
	kp := []seotest.Row{
		{Keyword: "running shoes", Volume: "10K – 100K", BidLow: "0.85", BidHigh: "2.41"},
		{Keyword: "Trail  Running Shoes", Volume: "1000", BidLow: "0.50", Currency: "EUR"},
		{Keyword: "barefoot shoes", Volume: "100 – 1K"},
		{Keyword: "", Volume: "10"},
		{Keyword: "shoe stretcher", Volume: "lots"},
	}
	ahrefs := []seotest.Row{
		{Keyword: "running shoes", Volume: "74000", Difficulty: "78", CPC: "1.20", Intents: "Commercial, Transactional", Parent: "running shoes"},
		{Keyword: "best running shoes for flat feet", Volume: "3,600", Difficulty: "", CPC: "", Intents: "Informational, Branded, Local", Parent: "flat feet running shoes"},
		{Keyword: "nike pegasus", Volume: "90000", Difficulty: "101", CPC: "0.9"},
	}
	semrush := []seotest.Row{
		{Keyword: "running shoes", Intents: "Commercial, Transactional", Volume: "74000", Difficulty: "78", CPC: "1.20"},
		{Keyword: "laufschuhe damen", Intents: "Transactional", Volume: "22200", Difficulty: "45", CPC: "0.65"},
		{Keyword: "how to lace running shoes", Intents: "Informational", Volume: "1900", Difficulty: "n/a", CPC: "0"},
	}
	cases := []struct {
		name      string
		data      []byte
		format    string
		encoding  string
		delimiter string
		rows      []want
		rejected  map[int]string // line → part of the reason
	}{
		{"GoogleKeywordPlanner", seotest.GoogleKeywordPlanner(kp), seo.FormatGoogle, seo.EncodingUTF16LE, "tab",
			[]want{
				{line: 4, keyword: "running shoes", volume: i64(10000), high: i64(100000), cpc: f64(1.63), currency: "USD"},
				{line: 5, keyword: "Trail Running Shoes", volume: i64(1000), cpc: f64(0.5), currency: "EUR"},
				{line: 6, keyword: "barefoot shoes", volume: i64(100), high: i64(1000), currency: "USD"},
			},
			map[int]string{7: "keyword: is empty", 8: `volume: "lots" is not a number`}},
		{"AhrefsUTF8", seotest.AhrefsCSV(ahrefs), seo.FormatAhrefs, seo.EncodingUTF8BOM, "comma",
			[]want{
				{line: 2, keyword: "running shoes", volume: i64(74000), difficulty: i64(78), cpc: f64(1.2), currency: "USD",
					intent: []string{"commercial", "transactional"}, parent: "running shoes"},
				{line: 3, keyword: "best running shoes for flat feet", volume: i64(3600), intent: []string{"informational"},
					parent: "flat feet running shoes"},
			},
			map[int]string{4: `difficulty: "101" is not a number from 0 to 100`}},
		{"AhrefsUTF16", seotest.AhrefsUTF16(ahrefs[:1]), seo.FormatAhrefs, seo.EncodingUTF16LE, "tab",
			[]want{{line: 2, keyword: "running shoes", volume: i64(74000), difficulty: i64(78), cpc: f64(1.2), currency: "USD",
				intent: []string{"commercial", "transactional"}, parent: "running shoes"}}, nil},
		{"SemrushComma", seotest.Semrush(semrush, ',', "USD"), seo.FormatSemrush, seo.EncodingUTF8, "comma",
			[]want{
				{line: 2, keyword: "running shoes", volume: i64(74000), difficulty: i64(78), cpc: f64(1.2), currency: "USD",
					intent: []string{"commercial", "transactional"}},
				{line: 3, keyword: "laufschuhe damen", volume: i64(22200), difficulty: i64(45), cpc: f64(0.65), currency: "USD",
					intent: []string{"transactional"}},
				{line: 4, keyword: "how to lace running shoes", volume: i64(1900), cpc: f64(0), currency: "USD", intent: []string{"informational"}},
			}, nil},
		{"SemrushSemicolon", seotest.Semrush(semrush[:2], ';', "EUR"), seo.FormatSemrush, seo.EncodingUTF8, "semicolon",
			[]want{
				{line: 2, keyword: "running shoes", volume: i64(74000), difficulty: i64(78), cpc: f64(1.2), currency: "EUR",
					intent: []string{"commercial", "transactional"}},
				{line: 3, keyword: "laufschuhe damen", volume: i64(22200), difficulty: i64(45), cpc: f64(0.65), currency: "EUR",
					intent: []string{"transactional"}},
			}, nil},
		{"UTF16BigEndian", seotest.UTF16BE("Keyword,Volume,Keyword Difficulty,CPC (GBP)\nköln café,\"1,300\",12,\"1,250.50\"\n"),
			seo.FormatSemrush, seo.EncodingUTF16BE, "comma",
			[]want{{line: 2, keyword: "köln café", volume: i64(1300), difficulty: i64(12), cpc: f64(1250.5), currency: "GBP"}}, nil},
		{"MalformedRows", []byte("Keyword;Volume;Keyword Difficulty;CPC (USD)\nok;10;5;0,5\ntoo;few\n\"never closed;1;2;3\nlast;1;2;3\n"),
			seo.FormatSemrush, seo.EncodingUTF8, "semicolon",
			[]want{{line: 2, keyword: "ok", volume: i64(10), difficulty: i64(5), cpc: f64(0.5), currency: "USD"}},
			map[int]string{3: "has 2 fields where the header has 4", 4: "a quoted field is not closed"}},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			t.Parallel()
			p, err := seo.Parse(c.data)
			if err != nil {
				t.Fatal(err)
			}
			if p.Format != c.format || p.Encoding != c.encoding || p.Delimiter != c.delimiter {
				t.Fatalf("read as %s/%s/%s, want %s/%s/%s", p.Format, p.Encoding, p.Delimiter, c.format, c.encoding, c.delimiter)
			}
			if len(p.Rows) != len(c.rows) {
				t.Fatalf("%d rows, want %d: %+v (rejected %+v)", len(p.Rows), len(c.rows), p.Rows, p.Rejected)
			}
			for i, w := range c.rows {
				r := p.Rows[i]
				if r.Line != w.line || r.Keyword != w.keyword || !eq(r.SearchVolume, w.volume) || !eq(r.SearchVolumeHigh, w.high) ||
					!eq(r.Difficulty, w.difficulty) || !eq(r.CPC, w.cpc) || r.Currency != w.currency || r.ParentKeyword != w.parent ||
					strings.Join(store.IntentNames(r.Intent), ",") != strings.Join(w.intent, ",") {
					t.Errorf("row %d: got line %d %q vol %v-%v diff %v cpc %v %q intent %v parent %q; want %+v", i, r.Line, r.Keyword,
						deref(r.SearchVolume), deref(r.SearchVolumeHigh), deref(r.Difficulty), deref(r.CPC), r.Currency,
						store.IntentNames(r.Intent), r.ParentKeyword, w)
				}
			}
			if len(p.Rejected) != len(c.rejected) {
				t.Fatalf("rejected %+v, want lines %v", p.Rejected, c.rejected)
			}
			for _, rj := range p.Rejected {
				if reason, ok := c.rejected[rj.Line]; !ok || !strings.Contains(rj.Reason, reason) {
					t.Errorf("rejected line %d: %q; want %q", rj.Line, rj.Reason, c.rejected[rj.Line])
				}
			}
			if p.DataRows != len(c.rows)+len(c.rejected) {
				t.Errorf("data rows %d, want %d", p.DataRows, len(c.rows)+len(c.rejected))
			}
		})
	}
}

func deref[T any](p *T) any {
	if p == nil {
		return nil
	}
	return *p
}

func TestParseRefuses(t *testing.T) {
	t.Parallel()
	cases := []struct {
		name   string
		data   []byte
		detail string
	}{
		{"Empty", nil, "file: is empty"},
		{"Windows1252", []byte("Keyword,Volume,Difficulty\ncaf\xe9,10,5\n"), "file: is not UTF-8, nor UTF-16 with a byte order mark"},
		{"UTF16WithoutBOM", seotest.UTF16LE("Keyword\tVolume\n")[2:], "file: has NUL bytes: UTF-16 without a byte order mark?"},
		{"OddUTF16", append(seotest.UTF16LE("Keyword\tVolume\n"), 'x'), "but has an odd number of bytes"},
		{"UnknownHeader", []byte("Keyword,Searches,Score\nshoes,10,5\n"), "file: the header (Keyword, Searches, Score) is not one of"},
		{"NoHeader", []byte("Term,Volume\nshoes,10\n"), "file: no header with a Keyword column in its first 10 lines (it starts \"Term,Volume / shoes,10\")"},
		{"TitlesOnly", seotest.UTF16LE("Keyword Stats 2024-06-01\r\nAll locations\r\n"), "file: no header with a Keyword column"},
		{"NoVolume", []byte("#,Keyword,KD,Volumes\n1,shoes,5,10\n"), "file: the header (#, Keyword, KD, Volumes) is not one of"},
		{"NoRows", seotest.GoogleKeywordPlanner(nil), "file: has a Google Keyword Planner header but no keyword rows"},
		{"TooManyRows", seotest.Semrush(seotest.Many(seo.MaxImportRows+1), ',', "USD"), "file: has more than 100000 keyword rows: split it"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			t.Parallel()
			_, err := seo.Parse(c.data)
			if store.KindOf(err) != store.KindInvalid || !strings.Contains(store.Message(err), c.detail) {
				t.Fatalf("got %v, want invalid with %q", err, c.detail)
			}
		})
	}
}

func TestParseValues(t *testing.T) {
	t.Parallel()
	// Volume ranges and counts the way the tools write them.
	for in, w := range map[string][2]*int64{
		"1K – 10K": {i64(1000), i64(10000)}, "10K-100K": {i64(10000), i64(100000)}, "1M – 10M": {i64(1000000), i64(10000000)},
		"0 – 10": {i64(0), i64(10)}, "1,300": {i64(1300), nil}, "1.5K": {i64(1500), nil}, "2 400": {i64(2400), nil}, "": {nil, nil},
		"-": {nil, nil},
	} {
		data := []byte("Keyword\tAvg. monthly searches\nx\t" + in + "\n")
		p, err := seo.Parse(data)
		if err != nil || len(p.Rows) != 1 {
			t.Fatalf("%q: %v %+v", in, err, p)
		}
		if r := p.Rows[0]; !eq(r.SearchVolume, w[0]) || !eq(r.SearchVolumeHigh, w[1]) {
			t.Errorf("%q: %v – %v", in, deref(r.SearchVolume), deref(r.SearchVolumeHigh))
		}
	}
	for _, bad := range []string{"10K – 1K", "ten", "-5", "1e400"} {
		p, err := seo.Parse([]byte("Keyword\tAvg. monthly searches\nx\t" + bad + "\n"))
		if err != nil || len(p.Rejected) != 1 {
			t.Errorf("%q: not rejected: %v %+v", bad, err, p)
		}
	}
}
