package seo

import (
	"context"

	"github.com/copydesk/copydesk/server/webhook"
	"github.com/copydesk/copydesk/store"
)

// MaxListedRejections caps the rejections an import's answer lists; it
// says how many more there were.
const MaxListedRejections = 100

// ImportResult is what an import did.
type ImportResult struct {
	Format     string
	Encoding   string
	Delimiter  string
	Rows       int // data rows in the file
	Imported   int // new keywords
	Updated    int // keywords the environment had, updated
	Duplicates int // rows whose keyword an earlier row of the file had, merged into it
	Rejected   int
	Rejections []Rejection // the first MaxListedRejections
	More       int         // rejections not listed
}

// Import writes a parsed file (Parse) into an environment the scope sees:
// rows of one keyword (after normalisation) are merged first, a later
// row's values over an earlier one's, so the file's last word counts and
// each keyword is written once; then everything is written in one
// transaction (store.ImportKeywords), which holds the writer only for the
// writes.
func (s *Service) Import(ctx context.Context, sc store.Scope, envID int64, p *Parsed) (*ImportResult, error) {
	if err := s.checkEnv(ctx, sc, envID); err != nil {
		return nil, err
	}
	res := &ImportResult{Format: p.Format, Encoding: p.Encoding, Delimiter: p.Delimiter, Rows: p.DataRows,
		Rejected: len(p.Rejected)}
	rows := make([]store.ImportRow, 0, len(p.Rows))
	at := make(map[string]int, len(p.Rows))
	for _, r := range p.Rows {
		key := store.KeywordKey(r.Keyword)
		if i, ok := at[key]; ok {
			merge(&rows[i], r.ImportRow)
			res.Duplicates++
			continue
		}
		at[key] = len(rows)
		rows = append(rows, r.ImportRow)
	}
	res.Rejections = p.Rejected
	if len(res.Rejections) > MaxListedRejections {
		res.Rejections, res.More = res.Rejections[:MaxListedRejections], len(res.Rejections)-MaxListedRejections
	}
	if len(rows) == 0 {
		return res, nil
	}
	counts, err := s.db.ImportKeywords(ctx, envID, "import:"+p.Format, rows)
	if err != nil {
		return nil, err
	}
	res.Imported, res.Updated = counts.Created, counts.Updated
	s.hooks.Emit(ctx, webhook.Event{Type: webhook.KeywordsImported, EnvironmentID: envID, Data: map[string]any{
		"format": p.Format, "created": counts.Created, "updated": counts.Updated, "rejected": res.Rejected, "user_id": sc.UserID}})
	return res, nil
}

// merge lays the values row has over those of dst (the same keyword,
// earlier in the file).
func merge(dst *store.ImportRow, row store.ImportRow) {
	if row.SearchVolume != nil {
		dst.SearchVolume, dst.SearchVolumeHigh = row.SearchVolume, row.SearchVolumeHigh
	}
	if row.Difficulty != nil {
		dst.Difficulty = row.Difficulty
	}
	if row.CPC != nil {
		dst.CPC, dst.Currency = row.CPC, row.Currency
	}
	if row.Intent != 0 {
		dst.Intent = row.Intent
	}
	if row.ParentKeyword != "" {
		dst.ParentKeyword = row.ParentKeyword
	}
}
