package canary

import (
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"fmt"

	"github.com/ripple-dev/ripple/internal/refs"
)

// RecordKey is the data key of a canary record.
const RecordKey = "canary"

// RecordName is the name of the ConfigMap, in Ripple's namespace, that
// records the canaried change of config in ns: a hash, as a config's
// namespace and name together may be longer than a name.
func RecordName(ns string, config refs.Ref) string {
	sum := sha256.Sum256([]byte(ns + "/" + config.String()))
	return "ripple-canary-" + hex.EncodeToString(sum[:10])
}

// ParseRecord reads the canaried change a record holds, and checks that
// it is the change of config in ns: a record of another config (a name
// made to clash, an edited record) is an error, never acted on.
func ParseRecord(data, ns string, config refs.Ref) (State, error) {
	var c State
	if err := json.Unmarshal([]byte(data), &c); err != nil {
		return State{}, fmt.Errorf("not a canary record: %w", err)
	}
	if c.Namespace != ns || c.Config != config {
		return State{}, fmt.Errorf("a record of %s %s/%s, not of %s %s/%s", c.Config.Kind, c.Namespace, c.Config.Name, config.Kind, ns, config.Name)
	}
	switch c.Phase {
	case Rolling, Baking, Passed, Halted:
	default:
		return State{}, fmt.Errorf("phase %q is not a canary phase", c.Phase)
	}
	// Its canaries are of the config's namespace, named, and at most as
	// many as a change has: a record that says otherwise is not acted on.
	if len(c.Members) > MaxMembers {
		return State{}, fmt.Errorf("%d canaries, more than %d", len(c.Members), MaxMembers)
	}
	for _, m := range c.Members {
		if m.Ref.Namespace != ns || m.Ref.Kind == "" || m.Ref.Name == "" {
			return State{}, fmt.Errorf("canary %s %s/%s is not a workload of namespace %s", m.Ref.Kind, m.Ref.Namespace, m.Ref.Name, ns)
		}
	}
	return c, nil
}
