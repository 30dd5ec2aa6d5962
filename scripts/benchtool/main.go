// Command benchtool does the service-side parts of the benchmarks in
// scripts/: the baselines that talk to the service directly, and reading the
// emulator's request counters.
//
//	benchtool -credentials FILE url PATH        presigned URL of shared/PATH
//	benchtool -credentials FILE loop DIR OUT    download every file of shared/DIR one by one into OUT
//	benchtool -credentials FILE stats           the emulator's counters: api=N objects=M
//	benchtool -credentials FILE create DIR NAME SIZE CHUNK_MB   start an upload: prints the file id, then one part URL a line
//	benchtool -credentials FILE complete ID ETAG...             complete an upload with its parts' ETags
//	benchtool -credentials FILE uploadloop SRC DIR              upload every file of local SRC into shared/DIR, one after another
//	benchtool -credentials FILE count DIR                       how many completed files shared/DIR holds
package main

import (
	"context"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"net/http"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"time"

	"golang.org/x/sync/errgroup"

	"github.com/orgfs/orgfs/api"
	"github.com/orgfs/orgfs/internal/emulator"
	"github.com/orgfs/orgfs/internal/logging"
)

// jobs is how many files loop and uploadloop move at once.
var jobs = 1

func main() {
	credPath := flag.String("credentials", "", "credentials file")
	flag.IntVar(&jobs, "j", 1, "loop and uploadloop: files at once (16: the parallel script a user would write)")
	flag.Parse()
	// A parallel script keeps its connections, as curl's would.
	http.DefaultTransport.(*http.Transport).MaxIdleConnsPerHost = 64
	if err := run(*credPath, flag.Args()); err != nil {
		fmt.Fprintln(os.Stderr, "benchtool:", err)
		os.Exit(1)
	}
}

func run(credPath string, args []string) error {
	if len(args) == 0 {
		return errors.New("usage: benchtool -credentials FILE url PATH | loop DIR OUT | stats")
	}
	quiet := logging.Discard()
	creds, err := api.LoadCredentialsWithLogger(credPath, quiet)
	if err != nil {
		return err
	}
	c, err := api.New(creds, api.Options{Logger: quiet, PerPage: 1000})
	if err != nil {
		return err
	}
	ctx := context.Background()
	switch {
	case args[0] == "url" && len(args) == 2:
		f, err := resolve(ctx, c, args[1])
		if err != nil {
			return err
		}
		link, err := c.FileURL(ctx, f.ID)
		if err != nil {
			return err
		}
		fmt.Println(link.URL)
	case args[0] == "loop" && len(args) == 3:
		return loop(ctx, c, args[1], args[2])
	case args[0] == "create" && len(args) == 5:
		dir, err := resolve(ctx, c, args[1])
		if err != nil {
			return err
		}
		size, err1 := strconv.ParseInt(args[3], 10, 64)
		chunk, err2 := strconv.ParseInt(args[4], 10, 64)
		if err := errors.Join(err1, err2); err != nil {
			return err
		}
		res, err := c.CreateFile(ctx, api.CreateFileRequest{ParentID: dir.ID, Name: args[2], ContentType: "application/octet-stream", Size: size, ChunkSizeMB: chunk, Overwrite: true})
		if err != nil {
			return err
		}
		fmt.Println(res.ID)
		for _, u := range res.UploadURLs {
			fmt.Println(u.URL)
		}
	case args[0] == "complete" && len(args) >= 3:
		id, err := strconv.ParseInt(args[1], 10, 64)
		if err != nil {
			return err
		}
		var parts []api.Part
		for i, etag := range args[2:] {
			parts = append(parts, api.Part{PartNumber: i + 1, ETag: etag})
		}
		_, err = c.CompleteFile(ctx, id, parts)
		return err
	case args[0] == "uploadloop" && len(args) == 3:
		dir, err := resolve(ctx, c, args[2])
		if err != nil {
			return err
		}
		ents, err := os.ReadDir(args[1])
		if err != nil {
			return err
		}
		g, gctx := errgroup.WithContext(ctx)
		g.SetLimit(jobs)
		for _, e := range ents {
			g.Go(func() error {
				f, err := os.Open(filepath.Join(args[1], e.Name()))
				if err != nil {
					return err
				}
				defer f.Close()
				st, _ := f.Stat()
				_, err = c.Upload(gctx, api.UploadRequest{ParentID: dir.ID, Name: e.Name(), Size: st.Size(), Body: f, Overwrite: true})
				return err
			})
		}
		return g.Wait()
	case args[0] == "count" && len(args) == 2:
		dir, err := resolve(ctx, c, args[1])
		if err != nil {
			return err
		}
		n := 0
		for f, err := range c.SharedFiles(ctx, api.ListFilesRequest{ParentID: dir.ID}).All() {
			if err != nil {
				return err
			}
			if !f.IsDir() {
				n++
			}
		}
		fmt.Println(n)
	case args[0] == "stats" && len(args) == 1:
		resp, err := http.Get(strings.TrimRight(creds.Endpoint, "/") + emulator.StatsPath)
		if err != nil {
			return err
		}
		defer resp.Body.Close()
		var st emulator.Stats
		if err := json.NewDecoder(resp.Body).Decode(&st); err != nil {
			return err
		}
		var n int64
		for _, v := range st.Requests {
			n += v
		}
		fmt.Printf("api=%d objects=%d\n", n, st.Objects.Gets+st.Objects.Puts)
	default:
		return fmt.Errorf("unknown command %q", strings.Join(args, " "))
	}
	return nil
}

// resolve finds shared/PATH by listing each folder on the way.
func resolve(ctx context.Context, c *api.Client, path string) (api.File, error) {
	var cur api.File
	parent := int64(0)
	for _, name := range strings.Split(strings.Trim(path, "/"), "/") {
		found := false
		for f, err := range c.SharedFiles(ctx, api.ListFilesRequest{ParentID: parent}).All() {
			if err != nil {
				return api.File{}, err
			}
			if f.Name == name {
				cur, parent, found = f, f.ID, true
				break
			}
		}
		if !found {
			return api.File{}, fmt.Errorf("shared/%s: no %q", path, name)
		}
	}
	return cur, nil
}

// loop is the per-file baseline: for each file, ask its URL and GET it.
func loop(ctx context.Context, c *api.Client, dir, out string) error {
	d, err := resolve(ctx, c, dir)
	if err != nil {
		return err
	}
	files, err := c.SharedFiles(ctx, api.ListFilesRequest{ParentID: d.ID}).Collect()
	if err != nil {
		return err
	}
	if err := os.MkdirAll(out, 0o755); err != nil {
		return err
	}
	start := time.Now()
	g, gctx := errgroup.WithContext(ctx)
	g.SetLimit(jobs)
	for _, f := range files {
		g.Go(func() error {
			link, err := c.FileURL(gctx, f.ID)
			if err != nil {
				return err
			}
			resp, err := http.Get(link.URL)
			if err != nil {
				return err
			}
			defer resp.Body.Close()
			dst, err := os.Create(filepath.Join(out, f.Name))
			if err != nil {
				return err
			}
			_, err = io.Copy(dst, resp.Body)
			return errors.Join(err, dst.Close())
		})
	}
	if err := g.Wait(); err != nil {
		return err
	}
	fmt.Printf("%d files in %.3f s\n", len(files), time.Since(start).Seconds())
	return nil
}
