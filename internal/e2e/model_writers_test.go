package e2e

import (
	"context"
	"errors"
	"fmt"
	"math/rand"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"syscall"
	"testing"

	"github.com/orgfs/orgfs/api"
)

// The model test's other writers. Each round, while the workers run, the
// mount (A) and a script through the API (the out-of-band writer, which
// overwrites blindly, as scripts do) write whole new contents to the same
// few names of shared/contended/, each content unique; a second mount (B,
// its own cache dir) reads them. Checked, with the faults and SIGKILLs of
// the model test:
//   - B never reads anything but a whole content one of them wrote: never a
//     mix of two versions (ESTALE or ENOENT are allowed answers);
//   - at the end, every file of shared/contended/ on the service holds a
//     content one of them wrote;
//   - A's last acknowledged content of each name (write, fsync and close
//     returned 0) is on the service, under the name or as a conflict copy,
//     unless the script wrote the name after it (what a blind overwrite
//     replaces is the script's doing) or A wrote it again since.

// contendedDir is the folder of shared/ the other writers use; the tree
// comparisons of the model test pass over it.
const contendedDir = "contended"

var contendedNames = []string{"c0", "c1.txt", "c2"}

type contention struct {
	t      *testing.T
	a, b   string // shared/contended of mount A and of mount B
	client *api.Client
	parent int64 // the folder's id on the service
	rng    *rand.Rand

	seq     int
	written map[string]bool // every content written or tried, by anyone
	aWrites map[string][]aWrite
	script  map[string]int // the seq of the script's last acknowledged write of each name
	log     []string
	reads   int
	copies  int // conflict copies on the service at the end
}

type aWrite struct {
	seq   int
	data  string
	acked bool
}

func newContention(t *testing.T, seed int64, mntA, mntB string, client *api.Client) *contention {
	c := &contention{t: t, a: filepath.Join(mntA, "shared", contendedDir), b: filepath.Join(mntB, "shared", contendedDir),
		client: client, rng: rand.New(rand.NewSource(seed + 7919)), written: map[string]bool{},
		aWrites: map[string][]aWrite{}, script: map[string]int{}}
	if err := os.Mkdir(c.a, 0o755); err != nil {
		t.Fatal(err)
	}
	return c
}

// content is a new content of name by who: unique, up to 3 KiB.
func (c *contention) content(who, name string) string {
	c.seq++
	b := make([]byte, c.rng.Intn(3<<10))
	c.rng.Read(b)
	s := fmt.Sprintf("%s %s #%d\n%s", who, name, c.seq, b)
	c.written[s] = true
	return s
}

// round runs n steps: A writes, the script writes, B reads. It returns a
// description of what went wrong, or "".
func (c *contention) round(ctx context.Context, n int) string {
	for range n {
		name := contendedNames[c.rng.Intn(len(contendedNames))]
		switch c.rng.Intn(3) {
		case 0:
			data := c.content("A", name)
			err := writeSyncClose(filepath.Join(c.a, name), data)
			c.aWrites[name] = append(c.aWrites[name], aWrite{seq: c.seq, data: data, acked: err == nil})
			c.log = append(c.log, fmt.Sprintf("A writes %s #%d: %v", name, c.seq, err))
		case 1:
			if c.parent == 0 {
				continue // the folder is not on the service yet
			}
			data := c.content("script", name)
			_, err := c.client.Upload(ctx, api.UploadRequest{ParentID: c.parent, Name: name, Size: int64(len(data)),
				Overwrite: true, Body: strings.NewReader(data)})
			if err == nil {
				c.script[name] = c.seq
			}
			c.log = append(c.log, fmt.Sprintf("script writes %s #%d: %v", name, c.seq, err))
		default:
			b, err := os.ReadFile(filepath.Join(c.b, name))
			c.log = append(c.log, fmt.Sprintf("B reads %s: %d bytes, %v", name, len(b), err))
			switch {
			case err == nil && !c.written[string(b)]:
				head, _, _ := strings.Cut(string(b), "\n")
				var same []int
				for w := range c.written {
					if strings.HasPrefix(w, head+"\n") {
						same = append(same, len(w))
					}
				}
				return fmt.Sprintf("B read %d bytes of %s that nobody wrote (a mix of versions?): it begins %q, whose content has %v bytes", len(b), name, head, same)
			case err != nil && !errors.Is(err, syscall.ESTALE) && !errors.Is(err, syscall.ENOENT) && !errors.Is(err, syscall.EIO):
				return fmt.Sprintf("B reading %s: %v", name, err)
			}
			c.reads++
		}
	}
	return ""
}

// found learns the folder's id once A's mkdir reached the service.
func (c *contention) found(ctx context.Context) {
	if c.parent != 0 {
		return
	}
	for f, err := range c.client.SharedFiles(ctx, api.ListFilesRequest{}).All() {
		if err == nil && f.Name == contendedDir && f.IsDir() {
			c.parent = f.ID
		}
	}
}

// check reads shared/contended/ from the service and checks what the type
// comment promises.
func (c *contention) check(ctx context.Context) string {
	c.found(ctx)
	if c.parent == 0 {
		return "shared/contended is not on the service"
	}
	files, err := c.client.SharedFiles(ctx, api.ListFilesRequest{ParentID: c.parent}).Collect()
	if err != nil {
		return err.Error()
	}
	held := map[string][]string{} // name (a copy's by its original) -> contents
	for _, f := range files {
		b, err := fileBytes(ctx, c.client, f)
		data := string(b)
		if err != nil {
			return fmt.Sprintf("reading %s from the service: %v", f.Name, err)
		}
		if !c.written[data] {
			return fmt.Sprintf("the service holds %d bytes in %s that nobody wrote", len(data), f.Name)
		}
		orig, _, copied := strings.Cut(f.Name, " (conflict ")
		if copied {
			c.copies++
		}
		if ext := filepath.Ext(f.Name); orig != f.Name && !strings.HasSuffix(orig, ext) {
			orig += ext
		}
		held[orig] = append(held[orig], data)
	}
	for name, ws := range c.aWrites {
		last := -1
		for i, w := range ws {
			if w.acked {
				last = i
			}
		}
		if last < 0 || c.script[name] > ws[last].seq {
			continue
		}
		ok := false
		for _, w := range ws[last:] { // the last acknowledged, or a later one (an fsync that failed, sent later)
			for _, h := range held[name] {
				ok = ok || h == w.data
			}
		}
		if !ok {
			return fmt.Sprintf("A's acknowledged write #%d of %s is on the service neither under the name nor as a conflict copy", ws[last].seq, name)
		}
	}
	return ""
}

// writeSyncClose writes data to p, replacing what was there, and returns
// the first error of open, write, fsync and close: nil is an acknowledged
// write.
func writeSyncClose(p, data string) error {
	f, err := os.OpenFile(p, os.O_WRONLY|os.O_CREATE|os.O_TRUNC, 0o644)
	if err != nil {
		return err
	}
	_, werr := f.WriteString(data)
	serr := f.Sync()
	cerr := f.Close()
	return errors.Join(werr, serr, cerr)
}

// runConcurrently runs f beside the round's workers.
func runConcurrently(wg *sync.WaitGroup, f func()) {
	wg.Add(1)
	go func() {
		defer wg.Done()
		f()
	}()
}
