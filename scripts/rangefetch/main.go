// Command rangefetch downloads one URL with N parallel ranged GETs and reports
// the time taken: the "8-stream parallel fetch" baseline of scripts/bench-read.
// With -random it is the random-read baseline of scripts/bench-fio instead:
// -workers at once, each making ranged GETs of -block bytes at random
// block-aligned offsets one after another, for -duration (or -requests GETs in
// all), and it reports the GETs a second.
//
//	go run ./scripts/rangefetch -streams 8 -out /dev/null URL
//	go run ./scripts/rangefetch -random -block 4096 -workers 8 -duration 10s URL
package main

import (
	"context"
	"flag"
	"fmt"
	"io"
	"math/rand/v2"
	"net/http"
	"os"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"golang.org/x/sync/errgroup"
)

func main() {
	streams := flag.Int("streams", 8, "parallel ranged requests")
	out := flag.String("out", "/dev/null", "where to write the content")
	random := flag.Bool("random", false, "random reads instead: ranged GETs of -block bytes at random offsets, reporting IOPS")
	block := flag.Int64("block", 4096, "-random: bytes of each GET (offsets are multiples of it)")
	workers := flag.Int("workers", 8, "-random: GETs in flight at once, each worker waiting for its last")
	duration := flag.Duration("duration", 10*time.Second, "-random: how long to run")
	requests := flag.Int64("requests", 0, "-random: stop after this many GETs in all (0: run for -duration)")
	flag.Parse()
	if flag.NArg() != 1 {
		fmt.Fprintln(os.Stderr, "usage: rangefetch [-streams N] [-out FILE] URL")
		fmt.Fprintln(os.Stderr, "       rangefetch -random [-block BYTES] [-workers N] [-duration D] [-requests N] URL")
		os.Exit(2)
	}
	if *random {
		if *block <= 0 || *workers <= 0 || *duration <= 0 {
			fmt.Fprintln(os.Stderr, "rangefetch: -block, -workers and -duration must be positive")
			os.Exit(2)
		}
		res, err := randomReads(context.Background(), flag.Arg(0), *block, *workers, *duration, *requests)
		if err != nil {
			fmt.Fprintln(os.Stderr, "rangefetch:", err)
			os.Exit(1)
		}
		secs := res.elapsed.Seconds()
		fmt.Printf("%d reads of %d bytes in %.3f s by %d workers: %.1f IOPS, %.1f MiB/s, mean latency %.1f ms\n",
			res.reads, *block, secs, *workers, float64(res.reads)/secs, float64(res.bytes)/secs/(1<<20),
			res.latency.Seconds()*1000/float64(max(res.reads, 1)))
		return
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

// randomResult is what randomReads did.
type randomResult struct {
	reads   int64         // GETs completed
	bytes   int64         // body bytes received
	elapsed time.Duration // from the first GET to the last one's end
	latency time.Duration // summed over the GETs
}

// randomReads runs workers loops of ranged GETs of block bytes at random
// block-aligned offsets of the object, each GET read to its end (so the
// connection is kept), until d has passed or requests GETs were made.
func randomReads(ctx context.Context, url string, block int64, workers int, d time.Duration, requests int64) (randomResult, error) {
	// A worker keeps its connection, as a parallel script with curl would.
	if t, ok := http.DefaultTransport.(*http.Transport); ok {
		t.MaxIdleConnsPerHost = max(workers, t.MaxIdleConnsPerHost)
	}
	size, err := objectSize(ctx, url)
	if err != nil {
		return randomResult{}, err
	}
	blocks := size / block
	if blocks == 0 {
		return randomResult{}, fmt.Errorf("the object (%d bytes) is smaller than a block of %d", size, block)
	}
	var (
		reads, bytes, lat atomic.Int64
		issued            atomic.Int64
		mu                sync.Mutex
		firstErr          error
		wg                sync.WaitGroup
	)
	start := time.Now()
	deadline := start.Add(d)
	for w := range workers {
		wg.Add(1)
		go func() {
			defer wg.Done()
			rng := rand.New(rand.NewPCG(uint64(start.UnixNano()), uint64(w)))
			buf := make([]byte, 64<<10)
			for time.Now().Before(deadline) {
				if requests > 0 && issued.Add(1) > requests {
					return
				}
				off := rng.Int64N(blocks) * block
				t0 := time.Now()
				resp, err := get(ctx, url, off, off+block-1)
				var n int64
				if err == nil {
					n, err = io.CopyBuffer(io.Discard, resp.Body, buf)
					resp.Body.Close()
					if err == nil && n != block {
						err = fmt.Errorf("range at %d: got %d bytes, not %d", off, n, block)
					}
				}
				if err != nil {
					mu.Lock()
					if firstErr == nil {
						firstErr = err
					}
					mu.Unlock()
					return
				}
				lat.Add(int64(time.Since(t0)))
				reads.Add(1)
				bytes.Add(n)
			}
		}()
	}
	wg.Wait()
	res := randomResult{reads: reads.Load(), bytes: bytes.Load(), elapsed: time.Since(start), latency: time.Duration(lat.Load())}
	return res, firstErr
}
