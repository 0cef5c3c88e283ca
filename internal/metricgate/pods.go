package metricgate

import (
	"regexp"
	"slices"
	"strconv"
	"strings"

	"github.com/ripple-dev/ripple/internal/workload"
)

// The names Kubernetes gives a workload's pods, by which $pods matches a
// canary's pods and no other workload's: Prometheus anchors a regular
// expression at both ends, so `web-<hash>-<5 chars>` does not match the
// pods of a Deployment web-x beside web.
const (
	// generatedChar is one character of what the API server appends to
	// a generateName (k8s.io/apimachinery/pkg/util/rand.String) and of a
	// pod-template-hash (rand.SafeEncodeString): consonants and digits
	// that spell no word.
	generatedChar = "[bcdfghjklmnpqrstvwxz2456789]"
	// randomLength is how many the API server appends
	// (k8s.io/apiserver/pkg/storage/names).
	randomLength = 5
	// maxGenerateName is how much of a generateName the API server keeps:
	// a generated name is at most 63 bytes.
	maxGenerateName = 63 - randomLength
	// maxHash is the longest pod-template-hash: a uint32 (an FNV-32a of
	// the template) in decimal, each digit encoded as a character.
	maxHash = 10
	digit   = "[0-9]"
	// maxInt32 and maxInt64 are the longest decimal int32 and int64: a
	// StatefulSet's ordinal, a Job's completion index; a CronJob's
	// scheduled minute, a DeploymentConfig's version.
	maxInt32 = 10
	maxInt64 = 19
)

// piece is a part of a name: a literal, or a character class repeated
// from lo to hi times.
type piece struct {
	lit    string
	class  string
	lo, hi int
}

func lit(s string) piece                   { return piece{lit: s} }
func rep(class string, lo, hi int) piece   { return piece{class: class, lo: lo, hi: hi} }
func name(n string, more ...piece) []piece { return slices.Concat([]piece{lit(n)}, more) }

func (p piece) maxLen() int {
	if p.class == "" {
		return len(p.lit)
	}
	return p.hi
}

func maxLen(ps []piece) int {
	n := 0
	for _, p := range ps {
		n += p.maxLen()
	}
	return n
}

// regex is p as a regular expression (RE2, as Prometheus reads it).
func (p piece) regex() string {
	switch {
	case p.class == "":
		return regexp.QuoteMeta(p.lit)
	case p.hi == 0:
		return ""
	case p.lo == p.hi && p.lo == 1:
		return p.class
	case p.lo == p.hi:
		return p.class + "{" + strconv.Itoa(p.lo) + "}"
	}
	return p.class + "{" + strconv.Itoa(p.lo) + "," + strconv.Itoa(p.hi) + "}"
}

func regex(ps []piece) string {
	var b strings.Builder
	for _, p := range ps {
		b.WriteString(p.regex())
	}
	return b.String()
}

// cut is the regular expressions (alternatives) of every name ps gives
// cut to its first n bytes, as the API server cuts a generateName.
func cut(ps []piece, n int) []string {
	if maxLen(ps) <= n {
		return []string{regex(ps)}
	}
	p, rest := ps[0], ps[1:]
	if p.class == "" {
		if len(p.lit) >= n {
			return []string{regexp.QuoteMeta(p.lit[:n])}
		}
		return prefixed(p.regex(), cut(rest, n-len(p.lit)))
	}
	var out []string
	k := p.lo
	if fit := min(p.hi, n-maxLen(rest)); fit >= p.lo { // the lengths of p whose rest is whole
		out = append(out, rep(p.class, p.lo, fit).regex()+regex(rest))
		k = fit + 1
	}
	for ; k <= p.hi; k++ {
		if k >= n {
			out = append(out, rep(p.class, n, n).regex())
			break
		}
		out = append(out, prefixed(rep(p.class, k, k).regex(), cut(rest, n-k))...)
	}
	return out
}

func prefixed(prefix string, rs []string) []string {
	out := make([]string, len(rs))
	for i, r := range rs {
		out[i] = prefix + r
	}
	return out
}

// generated is the names the API server generates from the generateNames
// bases give (k8s.io/apiserver/pkg/storage/names): the generateName cut
// to 58 bytes, then 5 random characters.
func generated(bases ...[]piece) []string {
	var out []string
	for _, b := range bases {
		out = append(out, cut(b, maxGenerateName)...)
	}
	return suffixed(out, rep(generatedChar, randomLength, randomLength).regex())
}

func suffixed(rs []string, suffix string) []string {
	out := make([]string, len(rs))
	for i, r := range rs {
		out[i] = r + suffix
	}
	return out
}

// indexed is the names of the pods of an Indexed Job of a name job gives
// (podGenerateNameWithIndex in Kubernetes' Job controller): the Job's
// name, cut so that "-<index>-" fits in 58 bytes, the completion index,
// a dash and 5 random characters.
func indexed(job []piece) []string {
	var out []string
	k := 1
	if fit := min(maxInt32, maxGenerateName-2-maxLen(job)); fit >= 1 { // the index lengths that leave the name whole
		out = append(out, regex(job)+"-"+rep(digit, 1, fit).regex()+"-")
		k = fit + 1
	}
	for ; k <= maxInt32; k++ {
		out = append(out, suffixed(cut(job, maxGenerateName-2-k), "-"+rep(digit, k, k).regex()+"-")...)
	}
	return suffixed(out, rep(generatedChar, randomLength, randomLength).regex())
}

// podNames is a regular expression matching the names of the pods of
// the workload c, a canary: the names its kind's controller gives them.
// A kind whose pods' names Ripple cannot know (a declared kind: its
// controller names them) keeps its name, a dash and anything.
func podNames(c workload.Ref) string {
	var alts []string
	dash := lit("-")
	switch c.Kind {
	case "Deployment", "Rollout":
		// A ReplicaSet <name>-<pod-template-hash> (an Argo Rollout's
		// too), whose pods are generated from "<replicaset>-".
		alts = generated(name(c.Name, dash, rep(generatedChar, 1, maxHash), dash))
	case "DaemonSet":
		alts = generated(name(c.Name, dash))
	case "StatefulSet":
		// <name>-<ordinal>, not generated.
		alts = []string{regex(name(c.Name, dash, rep(digit, 1, maxInt32)))}
	case "Job":
		alts = slices.Concat(generated(name(c.Name, dash)), indexed(name(c.Name)))
	case "CronJob":
		// Its Jobs: <name>-<scheduled minute> by its controller, or
		// <name>-<5 chars> generated (Ripple's reload, as Reloader's),
		// each indexed or not. A CronJob's name is at most 52 bytes, so
		// a started Job's generateName is never cut.
		scheduled, started := name(c.Name, dash, rep(digit, 1, maxInt64)), name(c.Name, dash, rep(generatedChar, randomLength, randomLength))
		alts = slices.Concat(generated(slices.Concat(scheduled, []piece{dash}), slices.Concat(started, []piece{dash})), indexed(scheduled), indexed(started))
	case "DeploymentConfig":
		// A ReplicationController <name>-<version>, whose pods are
		// generated from "<controller>-".
		alts = generated(name(c.Name, dash, rep(digit, 1, maxInt64), dash))
	default:
		return regexp.QuoteMeta(c.Name) + "-.*"
	}
	alts = compact(alts)
	if len(alts) == 1 {
		return alts[0]
	}
	return "(?:" + strings.Join(alts, "|") + ")"
}

// compact drops the alternatives rs repeats, keeping their order.
func compact(rs []string) []string {
	seen := make(map[string]bool, len(rs))
	out := rs[:0]
	for _, r := range rs {
		if !seen[r] {
			seen[r] = true
			out = append(out, r)
		}
	}
	return out
}
