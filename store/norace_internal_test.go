//go:build !race

package store

// raceDetector tells the tests they run under the race detector.
const raceDetector = false
