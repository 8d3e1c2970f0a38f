package dirlock

import (
	"errors"
	"os"
	"strconv"
	"strings"
	"testing"
)

func TestSecondAcquireNamesTheHolder(t *testing.T) {
	dir := t.TempDir() + "/data"
	l, err := Acquire(dir)
	if err != nil {
		t.Fatal(err)
	}
	// flock locks belong to open files: a second open in this process
	// conflicts like another process would.
	_, err = Acquire(dir)
	var held *HeldError
	if !errors.As(err, &held) || !strings.Contains(err.Error(), "pid "+strconv.Itoa(os.Getpid())) {
		t.Fatalf("second acquire: %v", err)
	}
	l.Release()
	l2, err := Acquire(dir)
	if err != nil {
		t.Fatalf("acquire after release: %v", err)
	}
	l2.Release()
}
