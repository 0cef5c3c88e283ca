package kit

import (
	"context"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"
)

// EventMatch selects events; an empty field matches anything.
type EventMatch struct {
	// Kind and Name are those of the object the event is about.
	Kind, Name string
	Reason     string
	// Type is Normal or Warning.
	Type string
}

// EventNotes returns the notes of the events in ns that match m, as the
// events.k8s.io API serves them.
func EventNotes(ctx context.Context, cs kubernetes.Interface, ns string, m EventMatch) ([]string, error) {
	list, err := cs.EventsV1().Events(ns).List(ctx, metav1.ListOptions{})
	if err != nil {
		return nil, err
	}
	var notes []string
	for _, e := range list.Items {
		if (m.Kind == "" || e.Regarding.Kind == m.Kind) && (m.Name == "" || e.Regarding.Name == m.Name) &&
			(m.Reason == "" || e.Reason == m.Reason) && (m.Type == "" || e.Type == m.Type) {
			notes = append(notes, e.Note)
		}
	}
	return notes, nil
}
