package store

// PostOrigin is what a post was saved from: at most one of an agent run,
// an archetype generation or a live session generation; none for a post
// written by hand or imported. Every post, new post and draft embeds it.
type PostOrigin struct {
	RunID            *int64
	CIERunID         *int64 // the archetype generation it was saved from
	LiveGenerationID *int64 // the live session generation it was saved from
}
