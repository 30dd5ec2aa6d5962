// Command benchtool does the service-side parts of the benchmarks in
// scripts/: the baselines that talk to the service directly, and reading the
// emulator's request counters.
//
//	benchtool -credentials FILE url PATH        presigned URL of shared/PATH
//	benchtool -credentials FILE ids DIR         "ID NAME" of each file of shared/DIR, a line each
//	benchtool -credentials FILE urlid ID        presigned URL of the file ID: one API request, as a script that knows the id
//	benchtool -credentials FILE loop DIR OUT    download every file of shared/DIR one by one into OUT
//	benchtool -credentials FILE stats           the emulator's counters: api=N objects=M
//	benchtool -credentials FILE create DIR NAME SIZE CHUNK_MB   start an upload: prints "ID CHUNK_MB" (the part size the service
//	                                                            answered, which may be larger than asked), then one part URL a line
//	benchtool -credentials FILE complete ID ETAG...             complete an upload with its parts' ETags
//	benchtool -credentials FILE uploadloop SRC DIR              upload the tree of local SRC into shared/DIR: its folders
//	                                                            first (a level at a time), then its files, one after another
//	benchtool -credentials FILE count DIR                       how many completed files shared/DIR holds
//	benchtool -credentials FILE list DIR                        list shared/DIR, its pages 16 at once: prints the entries
//	benchtool -credentials FILE tree DIR                        list the tree of shared/DIR, 16 folders at once: prints the files
//	benchtool -credentials FILE verify SRC DIR [EVERY]          shared/DIR holds the tree of local SRC: the same folders,
//	                                                            files and sizes, and the same bytes in every EVERYth file
//	                                                            (default 10; 1: all); exit 1 with the differences
//	benchtool gentree DIR [FILES [FOLDERS]]                     write a source-like tree (5,000 files, 60 folders)
//	benchtool loopback SRC MNT                                  mount local SRC at MNT through go-fuse's loopback file
//	                                                            system until SIGINT or SIGTERM (a FUSE floor)
//
// -j N moves N files at once in loop, uploadloop (and its folders of one
// level) and verify.
package main

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"maps"
	"math"
	"math/rand/v2"
	"net/http"
	"os"
	"path"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"sync"
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
	flag.IntVar(&jobs, "j", 1, "loop, uploadloop and verify: files at once (16: the parallel script a user would write)")
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
		return errors.New("usage: benchtool -credentials FILE url PATH | ids DIR | urlid ID | loop DIR OUT | stats | create ... | complete ... | uploadloop SRC DIR | count DIR | verify SRC DIR [EVERY]; benchtool gentree DIR [FILES [FOLDERS]]; benchtool loopback SRC MNT")
	}
	if args[0] == "gentree" && len(args) >= 2 && len(args) <= 4 {
		files, folders := 5000, 60
		var err1, err2 error
		if len(args) >= 3 {
			files, err1 = strconv.Atoi(args[2])
		}
		if len(args) == 4 {
			folders, err2 = strconv.Atoi(args[3])
		}
		if err := errors.Join(err1, err2); err != nil {
			return err
		}
		return gentree(args[1], files, folders)
	}
	if args[0] == "loopback" && len(args) == 3 {
		return loopback(args[1], args[2])
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
	case args[0] == "urlid" && len(args) == 2:
		id, err := strconv.ParseInt(args[1], 10, 64)
		if err != nil {
			return err
		}
		link, err := c.FileURL(ctx, id)
		if err != nil {
			return err
		}
		fmt.Println(link.URL)
	case args[0] == "ids" && len(args) == 2:
		dir, err := resolve(ctx, c, args[1])
		if err != nil {
			return err
		}
		for f, err := range c.SharedFiles(ctx, api.ListFilesRequest{ParentID: dir.ID}).All() {
			if err != nil {
				return err
			}
			if !f.IsDir() {
				fmt.Println(f.ID, f.Name)
			}
		}
	case args[0] == "verify" && (len(args) == 3 || len(args) == 4):
		every := 10
		if len(args) == 4 {
			if every, err = strconv.Atoi(args[3]); err != nil || every < 1 {
				return fmt.Errorf("verify: EVERY %q is not a positive number", args[3])
			}
		}
		return verify(ctx, c, args[1], args[2], every)
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
		fmt.Println(res.ID, res.ChunkSize)
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
		return uploadTree(ctx, c, args[1], args[2])
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
	case args[0] == "list" && len(args) == 2:
		// A script that knows the service: the folder's pages, 16 at once
		// once the first told how many (api's FileList.Collect).
		dir, err := resolve(ctx, c, args[1])
		if err != nil {
			return err
		}
		files, err := c.SharedFiles(ctx, api.ListFilesRequest{ParentID: dir.ID}).Collect()
		if err != nil {
			return err
		}
		fmt.Println(len(files))
	case args[0] == "tree" && len(args) == 2:
		// Every folder of the tree, 16 folders at once (-j), a level at a time.
		_, files, err := remoteTree(ctx, c, args[1])
		if err != nil {
			return err
		}
		fmt.Println(len(files))
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
		fmt.Printf("api=%d gets=%d objects=%d\n", n, st.Objects.Gets, st.Objects.Gets+st.Objects.Puts)
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

// localTree walks a local tree: its folders (relative, parents before their
// children) and its files (relative path to size).
func localTree(src string) (dirs []string, files map[string]int64, err error) {
	files = map[string]int64{}
	err = filepath.WalkDir(src, func(p string, d os.DirEntry, err error) error {
		if err != nil {
			return err
		}
		rel, err := filepath.Rel(src, p)
		if err != nil || rel == "." {
			return err
		}
		rel = filepath.ToSlash(rel)
		if d.IsDir() {
			dirs = append(dirs, rel)
			return nil
		}
		if !d.Type().IsRegular() {
			return fmt.Errorf("%s: not a regular file", p)
		}
		st, err := d.Info()
		if err != nil {
			return err
		}
		files[rel] = st.Size()
		return nil
	})
	return dirs, files, err
}

// parentOf is the folder of a relative path, "." at the top.
func parentOf(rel string) string {
	if i := strings.LastIndexByte(rel, '/'); i >= 0 {
		return rel[:i]
	}
	return "."
}

// uploadTree is the per-file upload baseline: it makes the folders of local
// src under shared/dst through the API, a level at a time (the folders of a
// level at once, -j at most), then uploads the files, -j at once, each with
// create, PUT and complete.
func uploadTree(ctx context.Context, c *api.Client, src, dst string) error {
	top, err := resolve(ctx, c, dst)
	if err != nil {
		return err
	}
	dirs, files, err := localTree(src)
	if err != nil {
		return err
	}
	var mu sync.Mutex
	ids := map[string]int64{".": top.ID}
	var levels [][]string
	for _, d := range dirs {
		n := strings.Count(d, "/")
		for len(levels) <= n {
			levels = append(levels, nil)
		}
		levels[n] = append(levels[n], d)
	}
	for _, level := range levels {
		g, gctx := errgroup.WithContext(ctx)
		g.SetLimit(jobs)
		for _, d := range level {
			g.Go(func() error {
				mu.Lock()
				parent := ids[parentOf(d)]
				mu.Unlock()
				res, err := c.CreateDirectory(gctx, api.CreateDirectoryRequest{ParentID: parent, Name: path.Base(d)})
				if err != nil {
					return fmt.Errorf("folder %s: %w", d, err)
				}
				mu.Lock()
				ids[d] = res.ID
				mu.Unlock()
				return nil
			})
		}
		if err := g.Wait(); err != nil {
			return err
		}
	}
	g, gctx := errgroup.WithContext(ctx)
	g.SetLimit(jobs)
	for _, rel := range slices.Sorted(maps.Keys(files)) {
		g.Go(func() error {
			f, err := os.Open(filepath.Join(src, filepath.FromSlash(rel)))
			if err != nil {
				return err
			}
			defer f.Close()
			_, err = c.Upload(gctx, api.UploadRequest{ParentID: ids[parentOf(rel)], Name: path.Base(rel), Size: files[rel], Body: f, Overwrite: true})
			if err != nil {
				return fmt.Errorf("%s: %w", rel, err)
			}
			return nil
		})
	}
	return g.Wait()
}

// remoteTree lists shared/dir recursively, a level at a time (the folders of
// a level at once): its folders and its completed files (relative path to
// the file).
func remoteTree(ctx context.Context, c *api.Client, dir string) (dirs map[string]bool, files map[string]api.File, err error) {
	top, err := resolve(ctx, c, dir)
	if err != nil {
		return nil, nil, err
	}
	dirs, files = map[string]bool{}, map[string]api.File{}
	type folder struct {
		rel string
		id  int64
	}
	level := []folder{{".", top.ID}}
	var mu sync.Mutex
	for len(level) > 0 {
		var next []folder
		g, gctx := errgroup.WithContext(ctx)
		g.SetLimit(max(jobs, 16))
		for _, d := range level {
			g.Go(func() error {
				for f, err := range c.SharedFiles(gctx, api.ListFilesRequest{ParentID: d.id}).All() {
					if err != nil {
						return fmt.Errorf("listing %s: %w", d.rel, err)
					}
					rel := f.Name
					if d.rel != "." {
						rel = d.rel + "/" + f.Name
					}
					mu.Lock()
					switch {
					case f.IsDir():
						dirs[rel] = true
						next = append(next, folder{rel, f.ID})
					case f.Details == nil || f.Details.Status == "" || f.Details.Status == api.FileStatusUploadCompleted:
						files[rel] = f
					}
					mu.Unlock()
				}
				return nil
			})
		}
		if err := g.Wait(); err != nil {
			return nil, nil, err
		}
		level = next
	}
	return dirs, files, nil
}

// verify checks that shared/dir holds the tree of local src: the same
// folders, the same files with the same sizes, and the same bytes in every
// every-th file (in path order).
func verify(ctx context.Context, c *api.Client, src, dir string, every int) error {
	ldirs, lfiles, err := localTree(src)
	if err != nil {
		return err
	}
	rdirs, rfiles, err := remoteTree(ctx, c, dir)
	if err != nil {
		return err
	}
	var diffs []string
	for _, d := range ldirs {
		if !rdirs[d] {
			diffs = append(diffs, "missing folder "+d)
		}
		delete(rdirs, d)
	}
	for _, d := range slices.Sorted(maps.Keys(rdirs)) {
		diffs = append(diffs, "extra folder "+d)
	}
	names := slices.Sorted(maps.Keys(lfiles))
	for _, rel := range names {
		f, ok := rfiles[rel]
		switch {
		case !ok:
			diffs = append(diffs, "missing file "+rel)
		case f.Size != lfiles[rel]:
			diffs = append(diffs, fmt.Sprintf("%s: %d bytes on the service, %d here", rel, f.Size, lfiles[rel]))
		}
	}
	for _, rel := range slices.Sorted(maps.Keys(rfiles)) {
		if _, ok := lfiles[rel]; !ok {
			diffs = append(diffs, "extra file "+rel)
		}
	}
	if len(diffs) == 0 {
		var mu sync.Mutex
		checked := 0
		g, gctx := errgroup.WithContext(ctx)
		g.SetLimit(max(jobs, 16))
		for i := 0; i < len(names); i += every {
			rel := names[i]
			g.Go(func() error {
				same, err := sameContent(gctx, c, rfiles[rel].ID, filepath.Join(src, filepath.FromSlash(rel)))
				if err != nil {
					return fmt.Errorf("%s: %w", rel, err)
				}
				mu.Lock()
				defer mu.Unlock()
				checked++
				if !same {
					diffs = append(diffs, rel+": content differs")
				}
				return nil
			})
		}
		if err := g.Wait(); err != nil {
			return err
		}
		if len(diffs) == 0 {
			fmt.Printf("shared/%s matches %s: %d folders, %d files, the content of %d compared\n", dir, src, len(ldirs), len(lfiles), checked)
			return nil
		}
	}
	slices.Sort(diffs)
	for i, d := range diffs {
		if i == 20 {
			fmt.Fprintf(os.Stderr, "... and %d more\n", len(diffs)-i)
			break
		}
		fmt.Fprintln(os.Stderr, d)
	}
	return fmt.Errorf("shared/%s differs from %s: %d differences", dir, src, len(diffs))
}

// sameContent downloads a file and compares it with a local one.
func sameContent(ctx context.Context, c *api.Client, id int64, local string) (bool, error) {
	want, err := os.ReadFile(local)
	if err != nil {
		return false, err
	}
	link, err := c.FileURL(ctx, id)
	if err != nil {
		return false, err
	}
	req, err := http.NewRequestWithContext(ctx, "GET", link.URL, nil)
	if err != nil {
		return false, err
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		return false, err
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		return false, fmt.Errorf("GET: %s", resp.Status)
	}
	got, err := io.ReadAll(resp.Body)
	if err != nil {
		return false, err
	}
	return bytes.Equal(got, want), nil
}

// gentree writes under out a tree like a mid-size repository's, the same on
// every run (fixed seeds): folders nested up to 4 deep, each under a folder
// picked at random among those made before it, and files in folders picked
// at random, their sizes log-uniform from 100 B to 1 MiB (about 110 KiB on
// average) and their bytes random.
func gentree(out string, files, folders int) error {
	const maxDepth, lo, hi = 4, 100, 1 << 20
	rng := rand.New(rand.NewPCG(20250601, 12))
	bytesRng := rand.NewChaCha8([32]byte{'o', 'r', 'g', 'f', 's'})
	type folder struct {
		rel   string
		depth int
	}
	words := strings.Fields("src pkg internal cmd docs test lib util api web assets scripts config core model net io ui db tools vendor build")
	exts := strings.Fields(".go .c .h .py .js .ts .md .json .txt .yaml .png .svg .html .css")
	all := []folder{{".", 0}}
	if err := os.MkdirAll(out, 0o755); err != nil {
		return err
	}
	for i := 0; i < folders; i++ {
		p := all[rng.IntN(len(all))]
		for p.depth >= maxDepth {
			p = all[rng.IntN(len(all))]
		}
		d := folder{filepath.Join(p.rel, fmt.Sprintf("%s%02d", words[rng.IntN(len(words))], i)), p.depth + 1}
		if err := os.Mkdir(filepath.Join(out, d.rel), 0o755); err != nil {
			return err
		}
		all = append(all, d)
	}
	buf := make([]byte, hi)
	var total int64
	for i := 0; i < files; i++ {
		d := all[rng.IntN(len(all))]
		size := int64(math.Round(math.Exp(math.Log(lo) + rng.Float64()*(math.Log(hi)-math.Log(lo)))))
		b := buf[:size]
		bytesRng.Read(b)
		name := fmt.Sprintf("file%04d%s", i, exts[rng.IntN(len(exts))])
		if err := os.WriteFile(filepath.Join(out, d.rel, name), b, 0o644); err != nil {
			return err
		}
		total += size
	}
	fmt.Printf("%d files, %d folders, %d bytes\n", files, folders, total)
	return nil
}
