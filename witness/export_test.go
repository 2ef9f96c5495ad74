package witness

// Hooks for the external tests.

// StatusCode is the HTTP status an AddCheckpoint error is answered with.
var StatusCode = statusCode

// SetTestingOnlyBeforeStore sets a function run after a checkpoint was
// checked and cosigned and before it is stored, with the origin's lock held.
func SetTestingOnlyBeforeStore(w *Witness, f func(origin string)) { w.testingOnlyBeforeStore = f }

// ReformatAddCheckpoint parses an add-checkpoint body and encodes it again.
func ReformatAddCheckpoint(body []byte) ([]byte, error) {
	r, err := parseAddCheckpoint(body)
	if err != nil {
		return nil, err
	}
	return formatAddCheckpoint(r), nil
}

// ReformatCheckpoint parses checkpoint text and encodes it again.
func ReformatCheckpoint(text string) (string, bool) {
	c, ok := parseCheckpoint(text)
	if !ok {
		return "", false
	}
	return c.String(), true
}
