package main

import (
	"fmt"
	"io"
	"os"
	"strings"

	"github.com/spf13/pflag"
)

// passwordFlags are the three ways a command is given a stored password
// (a datasource's, a Git token): never as a flag value, which ps would
// show.
type passwordFlags struct {
	stdin bool
	file  string
	none  bool
}

// add declares --password-stdin, --password-file and --no-password; what
// names what the password is ("password", "password or token").
func (p *passwordFlags) add(f *pflag.FlagSet, what string) {
	f.BoolVar(&p.stdin, "password-stdin", false, "read the "+what+" from standard input")
	f.StringVar(&p.file, "password-file", "", "read the "+what+" from this file")
	f.BoolVar(&p.none, "no-password", false, "remove the stored password")
}

// read returns the password the flags give: nil when none is given (the
// stored one is kept), "" for --no-password.
func (p *passwordFlags) read(stdin io.Reader) (*string, error) {
	n := 0
	for _, b := range []bool{p.stdin, p.file != "", p.none} {
		if b {
			n++
		}
	}
	if n > 1 {
		return nil, usagef("give at most one of --password-stdin, --password-file and --no-password")
	}
	var raw []byte
	switch {
	case p.stdin:
		b, err := io.ReadAll(io.LimitReader(stdin, 4096))
		if err != nil {
			return nil, fmt.Errorf("read password from stdin: %w", err)
		}
		raw = b
	case p.file != "":
		b, err := os.ReadFile(p.file)
		if err != nil {
			return nil, usagef("--password-file: %v", err)
		}
		raw = b
	case p.none:
		empty := ""
		return &empty, nil
	default:
		return nil, nil
	}
	pw := strings.TrimRight(string(raw), "\r\n")
	return &pw, nil
}
