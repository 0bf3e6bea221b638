//go:build !race

package server_test

// raceDetector tells the tests they run under the race detector.
const raceDetector = false
