package apertomemory

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"os"
)

// PassphraseEnv is the environment variable the reference implementation
// and its adapters read the passphrase from.
const PassphraseEnv = "AMEM_PASSPHRASE"

// maxPassphraseFile caps a passphrase file.
const maxPassphraseFile = 64 << 10

// ReadPassphrase returns the vault passphrase for a command-line tool: from
// the file at path when path is not empty (its content with one trailing
// "\n" or "\r\n" removed), otherwise from the environment variable env
// (PassphraseEnv when env is empty). A passphrase never comes from a flag
// value, and no error names it or any part of it; callers must not log it.
// An empty passphrase is an error.
func ReadPassphrase(path, env string) ([]byte, error) {
	if env == "" {
		env = PassphraseEnv
	}
	if path != "" {
		f, err := os.Open(path)
		if err != nil {
			return nil, fmt.Errorf("apertomemory: passphrase file: %w", err)
		}
		defer f.Close()
		b, err := io.ReadAll(io.LimitReader(f, maxPassphraseFile+1))
		if err != nil {
			return nil, fmt.Errorf("apertomemory: passphrase file: %w", err)
		}
		if len(b) > maxPassphraseFile {
			return nil, errors.New("apertomemory: passphrase file over 64 KiB")
		}
		if bytes.HasSuffix(b, []byte("\r\n")) {
			b = b[:len(b)-2]
		} else if bytes.HasSuffix(b, []byte("\n")) {
			b = b[:len(b)-1]
		}
		if len(b) == 0 {
			return nil, fmt.Errorf("apertomemory: passphrase file %s is empty", path)
		}
		return b, nil
	}
	v, ok := os.LookupEnv(env)
	if !ok || v == "" {
		return nil, fmt.Errorf("apertomemory: no passphrase: give a passphrase file or set %s", env)
	}
	return []byte(v), nil
}
