package plan

import (
	"fmt"
	"net/http"
	"net/url"
	"strconv"
	"strings"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/util/intstr"
	"k8s.io/apimachinery/pkg/util/validation"

	"github.com/ripple-dev/ripple/internal/annotation"
	"github.com/ripple-dev/ripple/internal/refs"
	"github.com/ripple-dev/ripple/internal/workload"
)

// The reload-action method reloads a workload without restarting anything:
// after the change, and after the kubelet has had time to write the new
// files into the pods' volumes, Ripple calls each Ready pod's reload
// endpoint (the reload-action annotation), and the app reads its files
// again. It can deliver only what reaches a running container: files of a
// whole ConfigMap, Secret, projected or CSI volume. An environment
// variable, a subPath file (bound once, at the container's start) or what
// an init container read never changes in a running pod, so a workload
// reading a config that way, or an env var an init container wrote from it
// (fileKeyRef, FileKeyBlocked), is refused the action (ActionBlocked) and
// reloads by its restart method instead.

// DefaultReloadDelay is how long after a change Ripple calls the pods when
// the workload does not say: the kubelet writes a changed ConfigMap or
// Secret into a pod's volume at the pod's next sync, which comes at most
// its syncFrequency (1m by default) times 1.5 (its jitter) after the
// change reached the kubelet's cache; 2m leaves half a minute for that.
const DefaultReloadDelay = 2 * time.Minute

// MaxReloadDelay bounds reload-delay: a change is delivered within the hour
// or the annotation is a mistake.
const MaxReloadDelay = time.Hour

// maxActionPath bounds the path of a reload action (an annotation is
// untrusted input, and the path goes into every request and event).
const maxActionPath = 256

// ParseReloadAction reads a reload-action value: "[METHOD ]:PORT/PATH", as
// ":9090/-/reload" or "PUT :http/reload?force=1". METHOD is GET, POST
// (the default) or PUT; PORT a port number or a container port's name;
// PATH an absolute path, with a query if any.
func ParseReloadAction(v string) (workload.Action, error) {
	a := workload.Action{Method: http.MethodPost}
	fields := strings.Fields(v)
	switch len(fields) {
	case 1:
	case 2:
		a.Method = strings.ToUpper(fields[0])
		if a.Method != http.MethodGet && a.Method != http.MethodPost && a.Method != http.MethodPut {
			return a, fmt.Errorf("%q: method %q is not GET, POST or PUT", v, fields[0])
		}
		fields = fields[1:]
	default:
		return a, fmt.Errorf("%q is not a reload action such as \":9090/-/reload\" or \"PUT :http/reload\"", v)
	}
	target, ok := strings.CutPrefix(fields[0], ":")
	port, path, slash := strings.Cut(target, "/")
	if !ok || !slash {
		return a, fmt.Errorf("%q is not a reload action such as \":9090/-/reload\" or \"PUT :http/reload\" (a colon, the port, then the path)", v)
	}
	var err error
	if a.Port, err = parsePort(port); err != nil {
		return a, fmt.Errorf("%q: %w", v, err)
	}
	a.Path = "/" + path
	if _, err := url.ParseRequestURI(a.Path); err != nil || len(a.Path) > maxActionPath || strings.ContainsFunc(a.Path, func(r rune) bool { return r < 0x21 || r > 0x7e || r == '#' }) {
		return a, fmt.Errorf("%q: the path is not a URL path (and query) of at most %d printable characters", v, maxActionPath)
	}
	return a, nil
}

// parsePort reads the port of a reload action: a number from 1 to 65535 or
// a port's name.
func parsePort(port string) (intstr.IntOrString, error) {
	if n, err := strconv.Atoi(port); err == nil {
		if msgs := validation.IsValidPortNum(n); len(msgs) > 0 {
			return intstr.IntOrString{}, fmt.Errorf("port %s", strings.Join(msgs, "; "))
		}
		return intstr.FromInt32(int32(n)), nil //nolint:gosec // validated above: 1-65535
	}
	if msgs := validation.IsValidPortName(port); len(msgs) > 0 {
		return intstr.IntOrString{}, fmt.Errorf("port %q is neither a number nor a port name: %s", port, strings.Join(msgs, "; "))
	}
	return intstr.FromString(port), nil
}

// ParseReloadDelay reads a reload-delay value: a duration from 0 to
// MaxReloadDelay, such as 90s or 2m.
func ParseReloadDelay(v string) (time.Duration, error) {
	d, err := time.ParseDuration(strings.TrimSpace(v))
	if err != nil || d < 0 || d > MaxReloadDelay {
		return 0, fmt.Errorf("%q is not a duration from 0 to %s, such as 90s or 2m", v, MaxReloadDelay)
	}
	return d, nil
}

// reloadActionOf reads the reload action of w (its own annotation, else its
// pod template's: an endpoint is the app's, never a Namespace's) and its
// delay into r; an invalid value is a problem, and r keeps the method it
// has.
func reloadActionOf(w Workload, keys annotation.Keys, r *workload.Restart) []string {
	v, from := w.Governing(keys.ReloadAction, "")
	if from != FromWorkload && from != FromTemplate {
		return nil
	}
	a, err := ParseReloadAction(v)
	if err != nil {
		return []string{fmt.Sprintf("%s: %v; reloading with restart method %q", governingAnnotation(keys.ReloadAction, from), err, r.Method)}
	}
	var problems []string
	r.Delay = DefaultReloadDelay
	if v, from := w.Governing(keys.ReloadDelay, ""); from != FromFlag {
		if d, err := ParseReloadDelay(v); err != nil {
			problems = append(problems, fmt.Sprintf("%s: %v; using %s", governingAnnotation(keys.ReloadDelay, from), err, DefaultReloadDelay))
		} else {
			r.Delay = d
		}
	}
	r.Method, r.Action, r.Instead = workload.RestartReloadAction, &a, r.Method
	return problems
}

// RefuseAction falls w's reload action back to its restart method when the
// action cannot deliver a change of one of sources (ActionBlocked), and
// returns the problem to tell; empty when w has no reload action or it
// can deliver every change.
func RefuseAction(w *Workload, sources []Source, keys annotation.Keys) string {
	r := &w.Restart
	if r.Method != workload.RestartReloadAction || w.Template == nil {
		return ""
	}
	why := ActionBlocked(&w.Template.Spec, refsOf(sources))
	if why == "" {
		return ""
	}
	r.Method, r.Action, r.Delay, r.Instead = r.Instead, nil, 0, ""
	return fmt.Sprintf("annotation %q: %s; reloading with restart method %q instead", keys.ReloadAction, why, r.Method)
}

// ActionBlocked says why the reload action of a workload with pod spec
// spec cannot deliver a change of one of sources (the configs that may
// reload it): a container reads it in a way a running container never
// sees change; empty when it can deliver every one.
func ActionBlocked(spec *corev1.PodSpec, sources []refs.Ref) string {
	watched := map[refs.Ref]bool{}
	for _, s := range sources {
		watched[s] = true
	}
	if why := FileKeyBlocked(spec, sources); why != "" {
		return why
	}
	subPath := subPathMounts(spec)
	for _, u := range refs.Uses(spec) {
		if !watched[u.Ref] || u.Container == "" {
			continue
		}
		switch config := string(u.Ref.Kind) + " " + u.Ref.Name; {
		case u.Init:
			return fmt.Sprintf("init container %s reads %s, and init containers do not run again", u.Container, config)
		case u.Via == refs.Env || u.Via == refs.EnvFrom:
			return fmt.Sprintf("container %s reads %s as environment variables, which never change in a running container", u.Container, config)
		case subPath[u.Container+"/"+u.Volume]:
			return fmt.Sprintf("container %s mounts %s (volume %s) with subPath, a file bound once, when the container starts", u.Container, config, u.Volume)
		}
	}
	return ""
}

// subPathMounts returns the container/volume pairs of spec's containers
// that mount a volume with subPath or subPathExpr.
func subPathMounts(spec *corev1.PodSpec) map[string]bool {
	out := map[string]bool{}
	for _, c := range spec.Containers {
		for _, m := range c.VolumeMounts {
			if m.SubPath != "" || m.SubPathExpr != "" {
				out[c.Name+"/"+m.Name] = true
			}
		}
	}
	return out
}

// refsOf is the configs sources are of.
func refsOf(sources []Source) []refs.Ref {
	out := make([]refs.Ref, 0, len(sources))
	for _, s := range sources {
		out = append(out, s.Ref)
	}
	return out
}
