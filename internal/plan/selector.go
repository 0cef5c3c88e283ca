package plan

import (
	"github.com/ripple-dev/ripple/internal/reason"
	"github.com/ripple-dev/ripple/internal/refs"
)

// A label selector (annotation.Keys.ConfigMapSelector, SecretSelector)
// chooses configs of the workload's namespace as if each were named
// (decide.SelectorMatch): a change of one rolls it with the same hash
// form, settle window, policies and canary. The set it selects is what
// the workload reads, so a config joining it by creation (created) and one
// leaving it by deletion (gone) are changes without --reload-on-create or
// --reload-on-delete. A deleted one is written as --reload-on-delete
// writes a named one: the strategy's value becomes the delete marker and
// the applied record drops it. A config that leaves the selection by a
// change of its labels is no longer selected: the record drops it without
// a rollout, as one gaining the label is a baseline (it existed before).

// TooBroad is a label selector refused because it selects more than
// annotation.MaxSelected configs of its kind; Message names its annotation
// and the count.
type TooBroad struct {
	Kind    refs.Kind
	Message string
}

// shows reports whether the workload shows a digest of ref: its applied
// record or its pod template.
func (wv view) shows(in Input, ref refs.Ref) bool {
	if _, ok := wv.record[ref.String()]; ok {
		return true
	}
	_, ok := in.Strategy.Applied(in.Workload.Template, ref)
	return ok
}

// tooBroadNotices tell each refused selector, on every plan, as the
// workload still carries it.
func tooBroadNotices(in Input, p *Plan) {
	for _, tb := range in.Workload.TooBroad {
		p.tell(notice(reason.SelectorTooBroad, nil, "%s", cut(tb.Message, maxWarningMessage)))
	}
}
