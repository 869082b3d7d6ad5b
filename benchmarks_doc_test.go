package realsync_test

import (
	"bufio"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
)

// TestBenchmarksCiteOneRun keeps docs/BENCHMARKS.md tied to one run of
// scripts/bench.sh whose whole output is committed in docs/bench/. It
// checks what can be checked cheaply, not every number:
//   - BENCHMARKS.md has one "Run:" line naming its log (docs/bench/*.log)
//     and the commit the run measured; the log exists, is no smoke run's
//     (REALSYNC_BENCH_SMOKE), and the commit exists in this repository
//     when its history is at hand;
//   - no other run's log is cited in BENCHMARKS.md, and every log cited in
//     docs/ exists; CAPACITY.md cites the same run as BENCHMARKS.md;
//   - every section title BENCHMARKS.md cites (`== title` in backticks, or
//     a "# == title" comment in a code block; "…" stands for any text, a
//     lone N for a number) is a section of that log;
//   - every command BENCHMARKS.md quotes as the log printed it (a code
//     line starting "$ ") is a line of that log, verbatim.
//
// A figure copied wrong from the log, or derived wrong, is not caught here;
// those of the tables of issue 6's and issue 15's targets are, by
// TestBenchmarksTargetsFromTheLog.
func TestBenchmarksCiteOneRun(t *testing.T) {
	doc := readDoc(t, "docs/BENCHMARKS.md")
	runLine := regexp.MustCompile(`(?m)^Run: .*?(docs/bench/[\w.-]+\.log)\b.*?\bcommit ([0-9a-f]{7,40})\b`)
	runs := runLine.FindAllStringSubmatch(doc, -1)
	if len(runs) != 1 {
		t.Fatalf(`docs/BENCHMARKS.md has %d "Run: … docs/bench/<name>.log … commit <hash>" lines, want 1`, len(runs))
	}
	logPath, commit := runs[0][1], runs[0][2]
	if _, err := os.Stat(logPath); err != nil {
		t.Fatalf("docs/BENCHMARKS.md's run log %s is not in docs/bench/: %v", logPath, err)
	}
	logText := readDoc(t, logPath)
	if strings.TrimSpace(logText) == "" {
		t.Fatalf("%s is empty", logPath)
	}
	if strings.HasPrefix(logText, "# smoke run") {
		t.Fatalf("%s is a smoke run's log (REALSYNC_BENCH_SMOKE): its figures are no measurement", logPath)
	}
	checkCommit(t, commit)

	// Logs cited anywhere in docs/ exist; BENCHMARKS.md and CAPACITY.md cite
	// only the run's.
	cited := regexp.MustCompile(`(?:docs/)?bench/[\w.-]+\.log`)
	mds, err := filepath.Glob("docs/*.md")
	if err != nil {
		t.Fatal(err)
	}
	for _, md := range mds {
		text := readDoc(t, md)
		for _, c := range cited.FindAllString(text, -1) {
			p := "docs/" + strings.TrimPrefix(c, "docs/")
			if _, err := os.Stat(p); err != nil {
				t.Errorf("%s cites %s, which does not exist", md, c)
			}
			if (md == "docs/BENCHMARKS.md" || md == "docs/CAPACITY.md") && p != logPath {
				t.Errorf("%s cites %s, not its run's log %s", md, c, logPath)
			}
		}
	}
	if !strings.Contains(readDoc(t, "docs/CAPACITY.md"), logPath) {
		t.Errorf("docs/CAPACITY.md does not name the run its tables come from (%s)", logPath)
	}

	titles := map[string]bool{}
	lines := map[string]bool{}
	for _, l := range strings.Split(logText, "\n") {
		l = strings.TrimRight(l, " \r")
		lines[l] = true
		if title, ok := strings.CutPrefix(l, "== "); ok {
			titles[title] = true
		}
	}

	// Cited section titles.
	citations := regexp.MustCompile("(?m)`== ([^`]+)`|# == (.+)$")
	n := 0
	for _, m := range citations.FindAllStringSubmatch(doc, -1) {
		cite := strings.TrimSpace(m[1] + m[2])
		cite = strings.Join(strings.Fields(cite), " ") // a citation may wrap
		re := titlePattern(cite)
		found := false
		for title := range titles {
			if re.MatchString(title) {
				found = true
				break
			}
		}
		if !found {
			t.Errorf("docs/BENCHMARKS.md cites section %q, which %s does not have", "== "+cite, logPath)
		}
		n++
	}
	if n == 0 {
		t.Errorf("docs/BENCHMARKS.md cites no section of %s", logPath)
	}

	// Quoted commands.
	inCode, quoted := false, 0
	sc := bufio.NewScanner(strings.NewReader(doc))
	for sc.Scan() {
		l := sc.Text()
		if strings.HasPrefix(l, "```") {
			inCode = !inCode
			continue
		}
		if !inCode || !strings.HasPrefix(l, "$ ") {
			continue
		}
		if i := strings.Index(l, " # == "); i >= 0 {
			l = l[:i]
		}
		l = strings.TrimRight(l, " ")
		if !lines[l] {
			t.Errorf("docs/BENCHMARKS.md quotes %q, which is not a line of %s", l, logPath)
		}
		quoted++
	}
	if quoted == 0 {
		t.Errorf("docs/BENCHMARKS.md quotes no command of %s", logPath)
	}
}

// TestBenchmarksTargetsFromTheLog runs scripts/targets.py --check on the
// run BENCHMARKS.md cites: every figure that script derives from the log
// for issue 15's and issue 6's targets (ratios within rounds, their
// medians, rates, percentiles, memory per stream and per room, the
// fan-out's efficiency) must stand in BENCHMARKS.md's table of that
// issue's targets, as the script rounds it.
func TestBenchmarksTargetsFromTheLog(t *testing.T) {
	out, err := exec.Command("python3", "scripts/targets.py", "--check").CombinedOutput()
	if err != nil {
		t.Fatalf("scripts/targets.py --check: %v\n%s", err, out)
	}
}

// titlePattern turns a cited title into a pattern of the log's titles:
// "…" any text, a lone N a number.
func titlePattern(cite string) *regexp.Regexp {
	var b strings.Builder
	b.WriteString("^")
	for i, part := range strings.Split(cite, "…") {
		if i > 0 {
			b.WriteString(".*")
		}
		q := regexp.QuoteMeta(part)
		q = regexp.MustCompile(`\bN\b`).ReplaceAllString(q, `\d+`)
		b.WriteString(q)
	}
	b.WriteString("$")
	return regexp.MustCompile(b.String())
}

func readDoc(t *testing.T, path string) string {
	t.Helper()
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}

// checkCommit requires the run's commit in this repository, unless the
// history is not at hand (no git, or a shallow clone).
func checkCommit(t *testing.T, commit string) {
	t.Helper()
	out, err := exec.Command("git", "rev-parse", "--is-shallow-repository").Output()
	if err != nil || strings.TrimSpace(string(out)) != "false" {
		t.Logf("commit %s not checked: no full git history here", commit)
		return
	}
	if err := exec.Command("git", "cat-file", "-e", commit+"^{commit}").Run(); err != nil {
		t.Errorf("docs/BENCHMARKS.md's run names commit %s, which this repository does not have", commit)
	}
}
