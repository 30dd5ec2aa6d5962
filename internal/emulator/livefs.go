package emulator

import (
	"strings"
)

// liveEntry is a Computer file-system entry (list-content).
type liveEntry struct {
	Path        string `json:"path"`
	Name        string `json:"name"`
	IsDirectory bool   `json:"is_directory"`
}

// fsTree is a running computer's (fake) Windows file system: entries by
// directory, keyed by the lower-cased normalized directory path.
type fsTree map[string][]liveEntry

// normalizeWinPath turns "c:/Users/", "C:\\Users\\" or "C:" into "C:\Users"
// ("C:\" for a drive root).
func normalizeWinPath(p string) string {
	p = strings.TrimSpace(strings.ReplaceAll(p, "/", `\`))
	for strings.Contains(p, `\\`) {
		p = strings.ReplaceAll(p, `\\`, `\`)
	}
	if len(p) >= 2 && p[1] == ':' {
		p = strings.ToUpper(p[:1]) + p[1:]
	}
	p = strings.TrimRight(p, `\`)
	if len(p) == 2 && p[1] == ':' {
		p += `\`
	}
	return p
}

func (t fsTree) add(dir, name string, isDir bool) string {
	dir = normalizeWinPath(dir)
	full := dir + `\` + name
	if strings.HasSuffix(dir, `\`) {
		full = dir + name
	}
	t[strings.ToLower(dir)] = append(t[strings.ToLower(dir)], liveEntry{Path: full, Name: name, IsDirectory: isDir})
	if isDir {
		if _, ok := t[strings.ToLower(full)]; !ok {
			t[strings.ToLower(full)] = nil
		}
	}
	return full
}

// list returns a directory's entries; false when the directory does not exist.
func (t fsTree) list(p string) ([]liveEntry, bool) {
	es, ok := t[strings.ToLower(normalizeWinPath(p))]
	if !ok {
		return nil, false
	}
	if es == nil {
		es = []liveEntry{}
	}
	return es, true
}

// liveTree builds the file system a computer shows while running. It depends
// on the computer's user and on how often it was reset (a reset computer
// lost its user files).
func liveTree(s *seat) fsTree {
	t := fsTree{}
	user := "user"
	if s.user != nil {
		user, _, _ = strings.Cut(s.user.email, "@")
	}
	t[strings.ToLower(`C:\`)] = nil
	t[strings.ToLower(`D:\`)] = nil
	for _, d := range []string{"Program Files", "Program Files (x86)", "ProgramData", "Users", "Windows"} {
		t.add(`C:\`, d, true)
	}
	t.add(`C:\`, "pagefile.sys", false)
	pf := `C:\Program Files`
	for _, d := range []string{"Common Files", "Google", "Microsoft VS Code", "7-Zip", "Windows Defender"} {
		t.add(pf, d, true)
	}
	t.add(t.add(pf+`\Google`, "Chrome", true), "Application", true)
	t.add(pf+`\Microsoft VS Code`, "Code.exe", false)
	t.add(pf+`\7-Zip`, "7z.exe", false)
	t.add(pf+`\7-Zip`, "7zFM.exe", false)
	t.add(`C:\Program Files (x86)`, "Common Files", true)
	t.add(`C:\ProgramData`, "Microsoft", true)
	win := `C:\Windows`
	for _, d := range []string{"System32", "Temp", "Fonts"} {
		t.add(win, d, true)
	}
	t.add(win, "explorer.exe", false)
	t.add(win, "notepad.exe", false)
	t.add(win+`\System32`, "cmd.exe", false)
	t.add(win+`\System32`, "drivers", true)
	users := `C:\Users`
	t.add(users, "Public", true)
	t.add(users, "Default", true)
	home := t.add(users, user, true)
	t.add(users+`\Public`, "Public Documents", true)
	for _, d := range []string{"AppData", "Desktop", "Documents", "Downloads", "Pictures", "Videos"} {
		t.add(home, d, true)
	}
	t.add(home, "NTUSER.DAT", false)
	t.add(home+`\AppData`, "Local", true)
	t.add(home+`\AppData`, "Roaming", true)
	t.add(home+`\Desktop`, "desktop.ini", false)
	if s.liveRevision == 0 {
		t.add(home+`\Desktop`, "Project notes.txt", false)
		t.add(home+`\Desktop`, "Render queue #2.lnk", false)
		docs := home + `\Documents`
		t.add(docs, "Report Q3.docx", false)
		t.add(docs, "Budget 2025.xlsx", false)
		proj := t.add(docs, "Projects", true)
		demo := t.add(proj, "Café menu", true)
		t.add(demo, "menu.pdf", false)
		t.add(demo, "photos", true)
		t.add(home+`\Downloads`, "installer.exe", false)
		t.add(home+`\Downloads`, "data export.csv", false)
		t.add(home+`\Pictures`, "screenshot 2024-09-30.png", false)
		t.add(home+`\Videos`, "walkthrough.mp4", false)
	}
	t.add(`D:\`, "Data", true)
	t.add(`D:\`, "Scratch", true)
	t.add(`D:\Data`, "dataset.parquet", false)
	return t
}
