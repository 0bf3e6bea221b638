package seo_test

import (
	"testing"

	"github.com/copydesk/copydesk/server/seo"
	"github.com/copydesk/copydesk/server/seo/seotest"
	"github.com/copydesk/copydesk/store"
)

// FuzzParse feeds the import's reader anything a user can upload: it
// never panics, a file it refuses is invalid input (a 422, never a 500),
// and every row it takes is one the store can write as it is: a keyword,
// no negative volume, a difficulty of 0 to 100, no negative CPC, and
// rows plus rejections no more than the data rows it counted.
func FuzzParse(f *testing.F) {
	rows := seotest.Many(3)
	rows[1].Volume, rows[2].Difficulty, rows[2].CPC = "1K – 10K", "101", "-1"
	for _, seed := range [][]byte{
		seotest.GoogleKeywordPlanner(rows), seotest.AhrefsCSV(rows), seotest.AhrefsUTF16(rows),
		seotest.Semrush(rows, ',', "USD"), seotest.Semrush(rows, ';', "EUR"),
		[]byte("Keyword\n"), []byte("\xff\xfe\x00"), []byte("a,b\n\"x"),
	} {
		f.Add(seed)
	}
	f.Fuzz(func(t *testing.T, data []byte) {
		p, err := seo.Parse(data)
		if err != nil {
			if k := store.KindOf(err); k != store.KindInvalid && k != store.KindMalformed && k != store.KindTooLarge {
				t.Fatalf("refused with a %v error, not invalid input: %v", k, err)
			}
			return
		}
		if len(p.Rows)+len(p.Rejected) > p.DataRows {
			t.Fatalf("%d rows and %d rejections from %d data rows", len(p.Rows), len(p.Rejected), p.DataRows)
		}
		for _, r := range p.Rows {
			switch {
			case r.Keyword == "":
				t.Fatalf("line %d: a row without a keyword was taken", r.Line)
			case r.SearchVolume != nil && *r.SearchVolume < 0:
				t.Fatalf("line %d: volume %d", r.Line, *r.SearchVolume)
			case r.Difficulty != nil && (*r.Difficulty < 0 || *r.Difficulty > 100):
				t.Fatalf("line %d: difficulty %d", r.Line, *r.Difficulty)
			case r.CPC != nil && *r.CPC < 0:
				t.Fatalf("line %d: cpc %v", r.Line, *r.CPC)
			}
		}
	})
}
