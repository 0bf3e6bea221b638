package agent

import (
	"math"
	"strings"
	"testing"

	"github.com/copydesk/copydesk/store"
)

func ptr[T any](v T) *T { return &v }

func TestNormalize(t *testing.T) {
	good := func() store.AgentInput {
		return store.AgentInput{Name: "  Blog writer ", Kind: "writer", Model: " gpt-4o ", Description: " keeps its spaces ",
			Temperature: ptr(0.0), MaxTokens: ptr(1)}
	}
	t.Run("OK", func(t *testing.T) {
		in := good()
		if err := normalize(&in); err != nil {
			t.Fatal(err)
		}
		if in.Name != "Blog writer" || in.Model != "gpt-4o" || in.Description != " keeps its spaces " {
			t.Fatalf("normalized: %+v", in)
		}
		for _, edge := range []func(*store.AgentInput){
			func(in *store.AgentInput) { in.Name = strings.Repeat("é", maxName) },
			func(in *store.AgentInput) { in.Temperature, in.MaxTokens = ptr(2.0), ptr(maxMaxTokens) },
			func(in *store.AgentInput) { in.Temperature, in.MaxTokens, in.Model = nil, nil, "" },
			func(in *store.AgentInput) { in.SystemPrompt = strings.Repeat("x", maxSystemPrompt-1) + "\n" },
		} {
			in := good()
			edge(&in)
			if err := normalize(&in); err != nil {
				t.Errorf("a value at a limit: %v", err)
			}
		}
	})
	for _, c := range []struct {
		name  string
		edit  func(*store.AgentInput)
		field string
	}{
		{"BlankName", func(in *store.AgentInput) { in.Name = " \t " }, "name"},
		{"LongName", func(in *store.AgentInput) { in.Name = strings.Repeat("é", maxName+1) }, "name"},
		{"NameWithNewline", func(in *store.AgentInput) { in.Name = "a\nb" }, "name"},
		{"ModelWithNUL", func(in *store.AgentInput) { in.Model = "gpt\x00" }, "model"},
		{"LongModel", func(in *store.AgentInput) { in.Model = strings.Repeat("m", maxModel+1) }, "model"},
		{"LongDescription", func(in *store.AgentInput) { in.Description = strings.Repeat("d", maxDescription+1) }, "description"},
		{"LongSystemPrompt", func(in *store.AgentInput) { in.SystemPrompt = strings.Repeat("p", maxSystemPrompt+1) }, "system_prompt"},
		{"UnknownKind", func(in *store.AgentInput) { in.Kind = "poet" }, "kind"},
		{"NoKind", func(in *store.AgentInput) { in.Kind = "" }, "kind"},
		{"TemperatureAbove2", func(in *store.AgentInput) { in.Temperature = ptr(2.01) }, "temperature"},
		{"NegativeTemperature", func(in *store.AgentInput) { in.Temperature = ptr(-0.1) }, "temperature"},
		{"NaNTemperature", func(in *store.AgentInput) { in.Temperature = ptr(math.NaN()) }, "temperature"},
		{"ZeroMaxTokens", func(in *store.AgentInput) { in.MaxTokens = ptr(0) }, "max_tokens"},
		{"TooManyMaxTokens", func(in *store.AgentInput) { in.MaxTokens = ptr(maxMaxTokens + 1) }, "max_tokens"},
		{"EnvironmentZero", func(in *store.AgentInput) { in.EnvironmentID = ptr(int64(0)) }, "environment_id"},
		{"CredentialNegative", func(in *store.AgentInput) { in.CredentialID = ptr(int64(-1)) }, "credential_id"},
	} {
		t.Run(c.name, func(t *testing.T) {
			in := good()
			c.edit(&in)
			err := normalize(&in)
			if store.KindOf(err) != store.KindInvalid || !strings.HasPrefix(store.Message(err), c.field+":") {
				t.Fatalf("got %v, want a 422 naming %s", err, c.field)
			}
		})
	}
}

func TestCheckAssignments(t *testing.T) {
	editor := store.NewScope(7, false, []int64{3, 1})
	admin := store.NewScope(1, true, nil)
	for _, c := range []struct {
		name string
		sc   store.Scope
		ids  []int64
		ok   bool
	}{
		{"Granted", editor, []int64{1, 3, 3}, true},
		{"None", editor, []int64{}, true},
		{"NotGranted", editor, []int64{1, 2}, false},
		{"AdminAny", admin, []int64{2, 99}, true}, // the store says whether they exist
		{"Zero", admin, []int64{0}, false},
		{"TooMany", admin, make([]int64, maxAssignments+1), false},
	} {
		t.Run(c.name, func(t *testing.T) {
			err := checkAssignments(c.sc, c.ids)
			if (err == nil) != c.ok || (err != nil && !strings.HasPrefix(store.Message(err), "environment_ids:")) {
				t.Fatalf("got %v", err)
			}
		})
	}
}

func TestCheckRunInput(t *testing.T) {
	vars := func(n int) map[string]string {
		m := map[string]string{}
		for i := range n {
			m[strings.Repeat("v", i+1)] = "x"
		}
		return m
	}
	if err := checkRunInput(RunInput{Input: strings.Repeat("é", maxInput), Variables: vars(maxVariables)}); err != nil {
		t.Fatalf("the limits themselves: %v", err)
	}
	for _, c := range []struct {
		name  string
		in    RunInput
		field string
	}{
		{"Empty", RunInput{}, "input"},
		{"Blank", RunInput{Input: " \n\t"}, "input"},
		{"Long", RunInput{Input: strings.Repeat("é", maxInput+1)}, "input"},
		{"TooManyVariables", RunInput{Input: "x", Variables: vars(maxVariables + 1)}, "variables"},
		{"EmptyName", RunInput{Input: "x", Variables: map[string]string{"": "y"}}, "variables"},
		{"LongName", RunInput{Input: "x", Variables: map[string]string{strings.Repeat("n", maxVariableName+1): "y"}}, "variables"},
		{"LongValue", RunInput{Input: "x", Variables: map[string]string{"a": strings.Repeat("y", maxVariableValue+1)}}, "variables"},
		{"EnvironmentZero", RunInput{Input: "x", EnvironmentID: ptr(int64(0))}, "environment_id"},
	} {
		t.Run(c.name, func(t *testing.T) {
			err := checkRunInput(c.in)
			if store.KindOf(err) != store.KindInvalid || !strings.HasPrefix(store.Message(err), c.field+":") {
				t.Fatalf("got %v, want a 422 naming %s", err, c.field)
			}
		})
	}
}

func TestFillVariables(t *testing.T) {
	got := FillVariables("{{topic}} for {{ brand }}; keep {{unknown}} and {{brand}}", map[string]string{"topic": "Tea", "brand": "Acme"})
	if got != "Tea for Acme; keep {{unknown}} and Acme" {
		t.Fatalf("got %q", got)
	}
	if got := FillVariables("{{x}}", nil); got != "{{x}}" {
		t.Fatalf("without variables: %q", got)
	}
}
