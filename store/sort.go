package store

import "strings"

// Sort is the order a list is read in: one field the route allows,
// ascending or, with Desc, descending. The zero Sort is the list's default
// order.
//
// The API spells it sort=field or sort=-field; the route's query type names
// the allowed fields (binding oneof, which also puts them in the OpenAPI
// document), and the resource's store file maps each to its column. Every
// column so named is led by an index (TestListQueryPlans holds each list to
// that), so a sorted page never sorts the whole table.
type Sort struct {
	Field string
	Desc  bool
}

// ParseSort reads the sort parameter: "name" or "-name"; "" is the default.
func ParseSort(s string) Sort {
	if f, ok := strings.CutPrefix(s, "-"); ok {
		return Sort{Field: f, Desc: true}
	}
	return Sort{Field: s}
}

// String is the parameter's spelling of s.
func (s Sort) String() string {
	if s.Desc {
		return "-" + s.Field
	}
	return s.Field
}

// orderBy renders s as an ORDER BY clause over the columns a list allows
// (field → column expression), ending with tie so that equal values keep a
// stable order across pages; tie takes the sort's direction, so a reverse
// sort is the exact reverse. The zero Sort gives def. A field outside
// columns is refused as invalid input: the route's oneof should have
// caught it, and a list must never fall back to an order nobody asked for.
func (s Sort) orderBy(columns map[string]string, def, tie string) (string, error) {
	if s == (Sort{}) {
		return def, nil
	}
	col, ok := columns[s.Field]
	if !ok {
		return "", Invalid("sort: %s is not a field this list sorts by", s.Field)
	}
	dir := " ASC"
	if s.Desc {
		dir = " DESC"
	}
	return col + dir + ", " + tie + dir, nil
}
