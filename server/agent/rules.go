package agent

import (
	"math"
	"slices"
	"strings"
	"unicode/utf8"

	"github.com/copydesk/copydesk/server/valid"
	"github.com/copydesk/copydesk/store"
)

// The rules of an agent's fields and of a run's input. The request types
// in server state the same limits in their binding tags, for the API
// document and the first 422; these hold whoever calls the service.
const (
	maxName          = 100
	maxDescription   = 2000
	maxModel         = 200
	maxSystemPrompt  = 50000
	maxTemperature   = 2
	maxMaxTokens     = 200000
	maxAssignments   = 1000
	maxInput         = 100000
	maxVariables     = 100
	maxVariableName  = 100
	maxVariableValue = 20000
)

var errKind = store.Invalid("kind: must be one of: %s", strings.Join(store.AgentKinds, ", "))

// normalize trims an agent's one-line fields and checks every field on its
// own; check adds the rules that need the store.
func normalize(in *store.AgentInput) error {
	in.Name = strings.TrimSpace(in.Name)
	in.Model = strings.TrimSpace(in.Model)
	if in.Name == "" {
		return store.Invalid("name: must not be empty")
	}
	for _, f := range []struct {
		field, v string
		max      int
		line     bool
	}{
		{"name", in.Name, maxName, true},
		{"model", in.Model, maxModel, true},
		{"description", in.Description, maxDescription, false},
		{"system_prompt", in.SystemPrompt, maxSystemPrompt, false},
	} {
		if f.line {
			if err := valid.Line(f.field, f.v); err != nil {
				return err
			}
		}
		if err := valid.MaxLen(f.field, f.v, f.max); err != nil {
			return err
		}
	}
	if !slices.Contains(store.AgentKinds, in.Kind) {
		return errKind
	}
	if t := in.Temperature; t != nil && (math.IsNaN(*t) || *t < 0 || *t > maxTemperature) {
		return store.Invalid("temperature: must be between 0 and %d", maxTemperature)
	}
	if m := in.MaxTokens; m != nil && (*m < 1 || *m > maxMaxTokens) {
		return store.Invalid("max_tokens: must be between 1 and %d", maxMaxTokens)
	}
	if id := in.EnvironmentID; id != nil && *id <= 0 {
		return store.Invalid("environment_id: must be a positive id")
	}
	if id := in.CredentialID; id != nil && *id <= 0 {
		return store.Invalid("credential_id: must be a positive id")
	}
	return nil
}

// checkAssignments: at most maxAssignments positive ids, each one the scope
// sees (the store checks that they exist).
func checkAssignments(sc store.Scope, envIDs []int64) error {
	if len(envIDs) > maxAssignments {
		return store.Invalid("environment_ids: at most %d", maxAssignments)
	}
	for _, id := range envIDs {
		if id <= 0 {
			return store.Invalid("environment_ids: must be positive ids")
		}
		if !sc.Sees(id) {
			return store.Invalid("environment_ids: no environment with id %d", id)
		}
	}
	return nil
}

// checkRunInput checks what a caller asks an agent to do.
func checkRunInput(in RunInput) error {
	if strings.TrimSpace(in.Input) == "" {
		return store.Invalid("input: must not be empty")
	}
	if err := valid.MaxLen("input", in.Input, maxInput); err != nil {
		return err
	}
	if err := CheckVariables(in.Variables); err != nil {
		return err
	}
	if id := in.EnvironmentID; id != nil && *id <= 0 {
		return store.Invalid("environment_id: must be a positive id")
	}
	return nil
}

// CheckVariables checks the {{name}} values given with an input: at most
// maxVariables, names of 1 to maxVariableName characters, values of at
// most maxVariableValue. Live sessions ask with the same rule.
func CheckVariables(vars map[string]string) error {
	if len(vars) > maxVariables {
		return store.Invalid("variables: at most %d", maxVariables)
	}
	for k, v := range vars {
		if k == "" || utf8.RuneCountInString(k) > maxVariableName || utf8.RuneCountInString(v) > maxVariableValue {
			return store.Invalid("variables: names must be 1 to %d characters and values at most %d", maxVariableName, maxVariableValue)
		}
	}
	return nil
}

// FillVariables replaces {{name}} (or {{ name }}) with its value.
func FillVariables(text string, vars map[string]string) string {
	if len(vars) == 0 {
		return text
	}
	pairs := make([]string, 0, 4*len(vars))
	for k, v := range vars {
		pairs = append(pairs, "{{"+k+"}}", v, "{{ "+k+" }}", v)
	}
	return strings.NewReplacer(pairs...).Replace(text)
}
