package runner

import (
	"context"
	"errors"
	"fmt"
	"maps"
	"net/url"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"time"

	"proxybench/internal/cellid"
	"proxybench/internal/dockerx"
	"proxybench/internal/manifest"
	"proxybench/internal/stack"
	"proxybench/loadgen/internal/plan"
)

// Cloner is the part of the engine a duet's candidate container needs;
// *dockerx.Client is one.
type Cloner interface {
	CloneContainer(ctx context.Context, id string, cl dockerx.Clone) (string, error)
	Remove(ctx context.Context, id string) error
}

// configDir is where every proxy's container finds its config
// (compose/docker-compose.yml mounts compose/<proxy>/ or one file of it
// there).
const configDir = "/etc/proxybench"

// A duet's candidate of another image or config (plan candidate_image,
// candidate_config) is a second container of the proxy: a clone of the
// proxy's own (same cpuset, quota, memory, ulimits, environment and so the
// same workers, host network), with the candidate's image and the
// candidate's config mounted in place of the proxy's, its compose service
// stack.CandidateService(proxy), listening on the proxy's ports shifted by
// stack.CandidateShift. The loadgen writes that config into the run's
// results (candidate/<proxy>/, the record of what was measured): the
// candidate's file, or the proxy's own when only the image changes, with
// every port of the proxy (stack.Proxy.Listeners) moved. Isolation pauses
// it like any other proxy; in a candidate cell the arm pauses the proxy
// and thaws the candidate, so one runs while the other is measured. It is
// removed when the run ends.

// startCandidate clones proxy's container ctr into its candidate, waits
// for the candidate's routes and returns its container.
func (r *Runner) startCandidate(ctx context.Context, proxy string, ctr *dockerx.Container) (*dockerx.Container, error) {
	cl, ok := r.Docker.(Cloner)
	if !ok || ctr == nil {
		return nil, errors.New("a candidate image or config needs the proxy's container to clone: run with Docker")
	}
	px, err := stack.LookupProxy(proxy)
	if err != nil {
		return nil, err
	}
	user := r.Plan.CandidateConfig
	if user != "" {
		if user, err = filepath.Abs(user); err != nil {
			return nil, err
		}
	}
	out, err := filepath.Abs(filepath.Join(r.dir, "candidate", proxy))
	if err != nil {
		return nil, err
	}
	dst, src, err := candidateConfig(px, ctr.Binds, user, out)
	if err != nil {
		return nil, fmt.Errorf("candidate config for %s: %w", proxy, err)
	}
	svc := stack.CandidateService(proxy)
	id, err := cl.CloneContainer(ctx, ctr.ID, dockerx.Clone{
		Name: r.Plan.Project + "-" + svc, Image: r.Plan.CandidateImage, NoProbe: true,
		Labels: map[string]string{dockerx.LabelService: svc},
		Mounts: map[string]string{dst: src},
	})
	if err != nil {
		return nil, err
	}
	c, err := r.Docker.Inspect(ctx, id)
	if err != nil {
		return nil, errors.Join(err, cl.Remove(context.WithoutCancel(ctx), id))
	}
	r.Log.Info("duet: candidate container up", "container", c.Name, "image", c.Image, "config", src,
		"ports", fmt.Sprint(shifted(px.Listeners())))
	if v, err := r.Docker.Version(ctx, c); err == nil {
		r.m.Versions[svc] = v
	}
	return &c, nil
}

// removeCandidates removes every candidate container the run started.
func (r *Runner) removeCandidates(ctx context.Context) {
	cl, ok := r.Docker.(Cloner)
	if !ok {
		return
	}
	for proxy, st := range r.proxies {
		if st.cand == nil {
			continue
		}
		if err := cl.Remove(ctx, st.cand.ID); err != nil {
			r.Log.Error("candidate container left behind: remove it with docker rm -f", "proxy", proxy, "err", err)
			continue
		}
		r.Log.Info("duet: candidate container removed", "container", st.cand.Name)
	}
}

// candidateConfig writes the candidate's config into dir out: user (a
// file or a directory; "" for the proxy's own) in place of the proxy's
// config mount among binds, every port of px shifted. It returns the
// mount's destination and the host path to mount there.
func candidateConfig(px stack.Proxy, binds map[string]string, user, out string) (dst, src string, err error) {
	var dsts []string
	for d := range binds {
		if d == configDir || strings.HasPrefix(d, configDir+"/") {
			dsts = append(dsts, d)
		}
	}
	if len(dsts) != 1 {
		return "", "", fmt.Errorf("the proxy's container has %d config mounts under %s (%v): want one", len(dsts), configDir, dsts)
	}
	dst = dsts[0]
	own := binds[dst]
	ownDir, err := isDir(own)
	if err != nil {
		return "", "", err
	}
	userDir := false
	if user != "" {
		if userDir, err = isDir(user); err != nil {
			return "", "", err
		}
	}
	// The proxy's own files, or the candidate's directory in place of the
	// proxy's; then a single file of the candidate's over its namesake.
	base := own
	if userDir && ownDir {
		base = user
	}
	if err := os.RemoveAll(out); err != nil {
		return "", "", err
	}
	if err := os.MkdirAll(out, 0o755); err != nil {
		return "", "", err
	}
	if err := copyFiles(base, out); err != nil {
		return "", "", err
	}
	switch {
	case user == "" || userDir && ownDir:
	case userDir: // the proxy's one file, from the candidate's directory
		err = copyFile(filepath.Join(user, filepath.Base(own)), filepath.Join(out, filepath.Base(own)))
	case ownDir: // one file of the proxy's directory, by its name
		name := filepath.Join(out, filepath.Base(user))
		if _, serr := os.Stat(name); serr != nil {
			names, _ := filepath.Glob(filepath.Join(own, "*"))
			return "", "", fmt.Errorf("%s: the proxy's config directory %s has no file of that name (it has %s); name the file after the one it replaces", user, own, baseNames(names))
		}
		err = copyFile(user, name)
	default:
		err = copyFile(user, filepath.Join(out, filepath.Base(own)))
	}
	if err != nil {
		return "", "", err
	}
	seen, err := shiftPorts(out, px)
	if err != nil {
		return "", "", err
	}
	if !seen {
		return "", "", fmt.Errorf("no file of it mentions the proxy's port %d: write the candidate's config like the proxy's own (its listeners on %v), and the loadgen moves them to %v", px.Port, px.Listeners(), shifted(px.Listeners()))
	}
	if ownDir {
		return dst, out, nil
	}
	return dst, filepath.Join(out, filepath.Base(own)), nil
}

// shiftPorts moves every listener port of px in the files of dir by
// stack.CandidateShift and says whether the traffic port was among them.
func shiftPorts(dir string, px stack.Proxy) (bool, error) {
	ports := px.Listeners()
	alt := make([]string, len(ports))
	for i, p := range ports {
		alt[i] = strconv.Itoa(p)
	}
	re := regexp.MustCompile(`\b(` + strings.Join(alt, "|") + `)\b`)
	files, err := filepath.Glob(filepath.Join(dir, "*"))
	if err != nil {
		return false, err
	}
	seen := false
	for _, f := range files {
		b, err := os.ReadFile(f)
		if err != nil {
			return false, err
		}
		s := re.ReplaceAllStringFunc(string(b), func(m string) string {
			p, _ := strconv.Atoi(m)
			seen = seen || p == px.Port
			return strconv.Itoa(p + stack.CandidateShift)
		})
		if err := os.WriteFile(f, []byte(s), 0o644); err != nil {
			return false, err
		}
	}
	return seen, nil
}

// shiftURL moves base's port by stack.CandidateShift: the candidate's
// address of a proxy's base URL.
func shiftURL(base string) (string, error) {
	u, err := url.Parse(base)
	if err != nil {
		return "", err
	}
	p, err := strconv.Atoi(u.Port())
	if err != nil {
		return "", fmt.Errorf("base URL %s has no port to move to the candidate's", base)
	}
	u.Host = u.Hostname() + ":" + strconv.Itoa(p+stack.CandidateShift)
	if strings.Contains(u.Hostname(), ":") {
		u.Host = "[" + u.Hostname() + "]:" + strconv.Itoa(p+stack.CandidateShift)
	}
	return u.String(), nil
}

func shifted(ports []int) []int {
	out := slices.Clone(ports)
	for i := range out {
		out[i] += stack.CandidateShift
	}
	return out
}

func isDir(path string) (bool, error) {
	fi, err := os.Stat(path)
	if err != nil {
		return false, err
	}
	return fi.IsDir(), nil
}

// copyFiles copies src (a file, or a directory's regular files) into dir.
func copyFiles(src, dir string) error {
	d, err := isDir(src)
	if err != nil {
		return err
	}
	if !d {
		return copyFile(src, filepath.Join(dir, filepath.Base(src)))
	}
	ents, err := os.ReadDir(src)
	if err != nil {
		return err
	}
	for _, e := range ents {
		if e.Type().IsRegular() {
			if err := copyFile(filepath.Join(src, e.Name()), filepath.Join(dir, e.Name())); err != nil {
				return err
			}
		}
	}
	return nil
}

func copyFile(src, dst string) error {
	b, err := os.ReadFile(src)
	if err != nil {
		return err
	}
	return os.WriteFile(dst, b, 0o644)
}

func baseNames(paths []string) string {
	out := make([]string, len(paths))
	for i, p := range paths {
		out[i] = filepath.Base(p)
	}
	return strings.Join(out, ", ")
}

// candidateStart is the least time a new candidate container is given to
// answer on every route: it has just started.
const candidateStart = 30 * time.Second

// prepareCandidate starts proxy's candidate container when the plan has
// one and checks its routes; isolation then pauses it until its cells. A
// candidate that cannot start or answer skips the candidate's cells (and
// so fails the duet), with the reason.
func (r *Runner) prepareCandidate(ctx context.Context, iso *isolation, proxy string, st *proxyState) {
	if !r.Plan.Candidate() {
		return
	}
	fail := func(err error) {
		r.Log.Error("duet: the candidate's cells are skipped", "proxy", proxy, "err", err)
		st.candErr = &manifest.Skip{Kind: manifest.SkipArm, Reason: "not run: candidate: " + err.Error()}
	}
	cand, err := r.startCandidate(ctx, proxy, st.ctr)
	if err != nil {
		fail(err)
		return
	}
	st.cand = cand
	at := func(p string) (string, error) {
		base, err := r.Target(p)
		if err != nil {
			return "", err
		}
		return shiftURL(base)
	}
	routes := r.preflight(ctx, proxy, r.cellsOf(proxy), at, max(time.Duration(r.Plan.Preflight), candidateStart))
	for _, o := range slices.Sorted(maps.Keys(routes)) {
		if !routes[o].OK {
			fail(fmt.Errorf("preflight of %s: %s", cand.Name, routes[o].Reason))
			return
		}
	}
	if r.Plan.Isolate {
		if err := iso.isolate(ctx, proxy); err != nil {
			fail(err)
		}
	}
}

// candidateCell says whether c runs on its proxy's candidate container.
func (r *Runner) candidateCell(c plan.Cell) bool {
	st := r.proxies[c.Proxy]
	return c.Arm == cellid.ArmCandidate && st != nil && st.cand != nil
}
