package kit

import (
	"bytes"
	"context"
	"fmt"
	"strings"
	"sync"
	"time"

	"k8s.io/apimachinery/pkg/util/wait"
)

// LogBuffer is a log sink safe for concurrent writers: a child process's
// stdout and stderr copiers, or a controller's goroutines that still log
// after a test ends, when t.Log would panic.
type LogBuffer struct {
	mu  sync.Mutex
	buf bytes.Buffer
}

func (b *LogBuffer) Write(p []byte) (int, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.buf.Write(p)
}

// Printf appends a formatted line of the test's own.
func (b *LogBuffer) Printf(format string, args ...any) {
	_, _ = fmt.Fprintf(b, format, args...)
}

// Len is how much has been written; From(Len()) is what comes next.
func (b *LogBuffer) Len() int {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.buf.Len()
}

// From returns what was written from offset on.
func (b *LogBuffer) From(offset int) string {
	b.mu.Lock()
	defer b.mu.Unlock()
	return string(b.buf.Bytes()[offset:])
}

func (b *LogBuffer) String() string { return b.From(0) }

// Lines returns the lines holding every one of subs, with JSON escaping of
// quotes undone so that API error messages read as the server wrote them.
func (b *LogBuffer) Lines(subs ...string) []string { return b.LinesFrom(0, subs...) }

// LinesFrom is Lines of what was written from offset on.
func (b *LogBuffer) LinesFrom(offset int, subs ...string) []string {
	var out []string
	for _, line := range strings.Split(strings.ReplaceAll(b.From(offset), `\"`, `"`), "\n") {
		ok := line != ""
		for _, s := range subs {
			ok = ok && strings.Contains(line, s)
		}
		if ok {
			out = append(out, line)
		}
	}
	return out
}

// WaitLines waits until at least n lines hold every one of subs, and
// returns them. A process's log reaches the buffer through a pipe, behind
// what the process did: a test that counts lines for something it saw on
// the API server waits here for the log to catch up before it judges.
func (b *LogBuffer) WaitLines(ctx context.Context, n int, subs ...string) ([]string, error) {
	var lines []string
	err := wait.PollUntilContextCancel(ctx, 20*time.Millisecond, true, func(context.Context) (bool, error) {
		lines = b.Lines(subs...)
		return len(lines) >= n, nil
	})
	if err != nil {
		return lines, fmt.Errorf("waiting for %d log lines with %q (%d so far): %w", n, subs, len(lines), err)
	}
	return lines, nil
}
