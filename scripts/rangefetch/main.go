// Command rangefetch downloads one URL with N parallel ranged GETs and reports
// the time taken: the "8-stream parallel fetch" baseline of scripts/bench-read.
//
//	go run ./scripts/rangefetch -streams 8 -out /dev/null URL
package main

import (
	"context"
	"flag"
	"fmt"
	"io"
	"net/http"
	"os"
	"strconv"
	"strings"
	"time"

	"golang.org/x/sync/errgroup"
)

func main() {
	streams := flag.Int("streams", 8, "parallel ranged requests")
	out := flag.String("out", "/dev/null", "where to write the content")
	flag.Parse()
	if flag.NArg() != 1 {
		fmt.Fprintln(os.Stderr, "usage: rangefetch [-streams N] [-out FILE] URL")
		os.Exit(2)
	}
	start := time.Now()
	n, err := fetch(context.Background(), flag.Arg(0), *streams, *out)
	if err != nil {
		fmt.Fprintln(os.Stderr, "rangefetch:", err)
		os.Exit(1)
	}
	secs := time.Since(start).Seconds()
	fmt.Printf("%d bytes in %.3f s (%.1f MiB/s)\n", n, secs, float64(n)/secs/(1<<20))
}

// fetch learns the size from a one-byte ranged GET, then splits the object
// into streams equal ranges fetched at once into out.
func fetch(ctx context.Context, url string, streams int, out string) (int64, error) {
	size, err := objectSize(ctx, url)
	if err != nil {
		return 0, err
	}
	f, err := os.OpenFile(out, os.O_WRONLY|os.O_CREATE, 0o600)
	if err != nil {
		return 0, err
	}
	defer f.Close()
	per := (size + int64(streams) - 1) / int64(streams)
	g, ctx := errgroup.WithContext(ctx)
	for off := int64(0); off < size; off += per {
		end := min(off+per, size) - 1
		g.Go(func() error {
			resp, err := get(ctx, url, off, end)
			if err != nil {
				return err
			}
			defer resp.Body.Close()
			n, err := io.Copy(io.NewOffsetWriter(f, off), resp.Body)
			if err == nil && n != end-off+1 {
				err = fmt.Errorf("range %d-%d: got %d bytes", off, end, n)
			}
			return err
		})
	}
	return size, g.Wait()
}

// get asks for bytes from..to and returns the 206 response.
func get(ctx context.Context, url string, from, to int64) (*http.Response, error) {
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, url, nil)
	if err != nil {
		return nil, err
	}
	req.Header.Set("Range", fmt.Sprintf("bytes=%d-%d", from, to))
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		return nil, err
	}
	if resp.StatusCode != http.StatusPartialContent {
		resp.Body.Close()
		return nil, fmt.Errorf("range %d-%d: HTTP %d", from, to, resp.StatusCode)
	}
	return resp, nil
}

// objectSize reads the total from the Content-Range of a one-byte request.
func objectSize(ctx context.Context, url string) (int64, error) {
	resp, err := get(ctx, url, 0, 0)
	if err != nil {
		return 0, err
	}
	resp.Body.Close()
	cr := resp.Header.Get("Content-Range")
	i := strings.LastIndexByte(cr, '/')
	if i < 0 {
		return 0, fmt.Errorf("no size in Content-Range %q", cr)
	}
	return strconv.ParseInt(cr[i+1:], 10, 64)
}
