package server_test

// The OpenAPI document is built from the router's route table by this test
// code (so kin-openapi stays out of the binary) and committed as
// web/openapi.json, which the binary embeds and serves. `make openapi`
// rewrites it; TestOpenAPIDocumentIsCurrent fails when it is stale.

import (
	"cmp"
	"encoding/json"
	"fmt"
	"net/http"
	"reflect"
	"slices"
	"sort"
	"strconv"
	"strings"
	"time"

	"github.com/getkin/kin-openapi/openapi3"
	"github.com/getkin/kin-openapi/openapi3gen"

	"github.com/copydesk/copydesk/backup"
	"github.com/copydesk/copydesk/server"
	"github.com/copydesk/copydesk/store"
)

// ---- the OpenAPI document ----

var statusText = map[int]string{
	400: "The request could not be read (malformed JSON, wrong shape).",
	401: "Missing, malformed, expired, wrongly signed or revoked token, or bad credentials.",
	403: "Your role is too low for this, the action is not allowed, or an API token may not do it (read-only, limited to environments, or a route that needs a password sign-in).",
	404: "Not found, or not visible to you.",
	409: "Conflicts with the current state.",
	413: "The request body is too large.",
	415: "The body is declared as something other than JSON: send Content-Type: application/json.",
	422: "Validation failed; the detail names the field and the rule.",
	429: "Too many failed attempts for this account; see Retry-After.",
	500: "Internal error; the cause is in the server log.",
	502: "The remote service (LLM provider, WordPress, SERP API) failed; the detail has its message.",
	504: "The remote service (WordPress) did not answer in time; the detail says what to do next.",
	503: "The service cannot serve right now.",
}

// BuildOpenAPI describes routes as an OpenAPI 3.0 document.
func BuildOpenAPI(routes []*server.Route, version string) ([]byte, error) {
	doc := &openapi3.T{
		OpenAPI: "3.0.3",
		Info: &openapi3.Info{
			Title:   "copydesk API",
			Version: version,
			Description: "Self-hosted content and SEO automation. Success bodies are {\"data\": ..., \"message\": ...} " +
				"except POST /api/auth/login and POST /api/auth/refresh, which return the token object bare. " +
				"Every error is {\"detail\": \"...\"}. Lists are paginated with page and per_page (1-200, default 50); " +
				"a list that can be sorted takes sort=field or sort=-field (descending), with the fields each route lists. " +
				"Bulk actions are POST .../bulk-delete or .../bulk-update with {\"ids\": [...]}, answering {\"changed\": n}. " +
				"JSON bodies are sent with Content-Type: application/json (or none); another type is 415. " +
				"A query parameter a route does not list is 422. Times are RFC 3339 in UTC with milliseconds. " +
				"HEAD is answered wherever GET is, with GET's status and headers and no body. " +
				"A text/event-stream answer lists its events and their data under x-events.",
			License: &openapi3.License{Name: "MIT", URL: "https://opensource.org/license/mit"},
		},
		Paths: openapi3.NewPaths(),
		Components: &openapi3.Components{
			Schemas:   openapi3.Schemas{},
			Responses: openapi3.ResponseBodies{},
			SecuritySchemes: openapi3.SecuritySchemes{
				"bearerAuth": &openapi3.SecuritySchemeRef{Value: openapi3.NewJWTSecurityScheme().WithDescription(
					"The access_token of POST /api/auth/login, or a personal API token (cdk_..., POST /api/auth/tokens).")},
			},
		},
	}
	doc.Components.Schemas["Error"] = &openapi3.SchemaRef{Value: &openapi3.Schema{
		Type:     &openapi3.Types{openapi3.TypeObject},
		Required: []string{"detail"},
		Properties: openapi3.Schemas{"detail": openapi3.NewStringSchema().NewRef(),
			"fields": errorFields()},
	}}
	for code, text := range statusText {
		doc.Components.Responses[strconv.Itoa(code)] = &openapi3.ResponseRef{Value: openapi3.NewResponse().
			WithDescription(text).WithJSONSchemaRef(openapi3.NewSchemaRef("#/components/schemas/Error", nil))}
	}

	gen := openapi3gen.NewGenerator(
		openapi3gen.CreateComponentSchemas(openapi3gen.ExportComponentSchemasOptions{ExportComponentSchemas: true, ExportTopLevelSchema: true}),
		openapi3gen.SchemaCustomizer(customizeSchema),
	)
	schemaOf := func(v any) (*openapi3.SchemaRef, error) {
		return gen.NewSchemaRefForValue(v, doc.Components.Schemas)
	}

	for _, r := range routes {
		op := &openapi3.Operation{
			Tags:        []string{r.Tag},
			Summary:     r.Summary,
			OperationID: operationID(r.Method, r.Path),
			Responses:   openapi3.NewResponses(),
		}
		desc := r.Notes
		if r.Access.Public {
			op.Security = &openapi3.SecurityRequirements{}
		} else {
			op.Security = &openapi3.SecurityRequirements{{"bearerAuth": []string{}}}
			desc = strings.TrimSpace(desc + "\n\nRequires the " + string(r.Access.MinRole) + " role or higher.")
			if r.Access.Account {
				desc += " Not with an API token (403): sign in with your password."
			}
		}
		op.Description = desc
		// Every route refuses query parameters it does not know (422).
		errs := map[int]bool{500: true, 422: true}
		for _, e := range r.Errors {
			errs[e] = true
		}
		if !r.Access.Public {
			errs[401] = true
		}
		// Above viewer a role may be too low; an API token may be refused
		// an account route, or any other than GET as a read-only token.
		if r.Access.MinRole.Level() > store.RoleViewer.Level() || r.Access.Account || (!r.Access.Public && r.Method != "GET") {
			errs[403] = true
		}
		for _, seg := range strings.Split(r.Path, "/") {
			if strings.HasPrefix(seg, "{") {
				name := strings.Trim(seg, "{}")
				p := openapi3.NewPathParameter(name).WithSchema(openapi3.NewInt64Schema().WithMin(1))
				if name == "name" { // a backup's file name (copydesk-20260102-030405-manual.db), the one path parameter that is not an id
					p = openapi3.NewPathParameter(name).WithSchema(openapi3.NewStringSchema().WithMaxLength(100).WithPattern(backup.NamePattern))
				}
				op.AddParameter(p)
				errs[404] = true
			}
		}
		if r.Query != nil {
			for _, p := range queryParams(reflect.TypeOf(r.Query)) {
				op.AddParameter(p)
			}
			errs[422] = true
		}
		if r.Body != nil {
			ref, err := schemaOf(r.Body)
			if err != nil {
				return nil, fmt.Errorf("%s %s body: %w", r.Method, r.Path, err)
			}
			op.RequestBody = &openapi3.RequestBodyRef{Value: openapi3.NewRequestBody().WithRequired(true).WithJSONSchemaRef(ref)}
			errs[400], errs[413], errs[415], errs[422] = true, true, true, true
		}
		if r.Multipart != "" {
			schema := openapi3.NewObjectSchema().WithProperty(r.Multipart, openapi3.NewStringSchema().WithFormat("binary"))
			schema.Required = []string{r.Multipart}
			if r.Form != nil {
				for _, p := range queryParams(reflect.TypeOf(r.Form)) {
					schema.WithProperty(p.Name, p.Schema.Value)
				}
				schema.Required = append(schema.Required, requiredForms(reflect.TypeOf(r.Form))...)
			}
			op.RequestBody = &openapi3.RequestBodyRef{Value: openapi3.NewRequestBody().WithRequired(true).
				WithContent(openapi3.NewContentWithSchema(schema, []string{"multipart/form-data"}))}
			errs[400], errs[413], errs[422] = true, true, true
		}
		success := openapi3.NewResponse().WithDescription(http.StatusText(r.Status))
		switch {
		case r.Binary != "":
			success.WithContent(openapi3.NewContentWithSchema(openapi3.NewStringSchema().WithFormat("binary"), strings.Split(r.Binary, ", ")))
		case r.Bare != nil:
			ref, err := schemaOf(r.Bare)
			if err != nil {
				return nil, err
			}
			success.WithJSONSchemaRef(ref)
		default:
			var data *openapi3.SchemaRef
			var err error
			if r.Data != nil {
				data, err = schemaOf(r.Data)
				if err != nil {
					return nil, fmt.Errorf("%s %s data: %w", r.Method, r.Path, err)
				}
			} else {
				data = openapi3.NewObjectSchema().NewRef()
			}
			if r.List {
				list := openapi3.NewObjectSchema().
					WithProperty("items", openapi3.NewArraySchema().WithItems(data.Value)).
					WithProperty("total", openapi3.NewIntegerSchema()).
					WithProperty("page", openapi3.NewIntegerSchema()).
					WithProperty("per_page", openapi3.NewIntegerSchema())
				list.Properties["items"].Value.Items = data
				list.Required = []string{"items", "total", "page", "per_page"}
				data = list.NewRef()
			}
			env := openapi3.NewObjectSchema().WithProperty("message", openapi3.NewStringSchema())
			env.Properties["data"] = data
			env.Required = []string{"data", "message"}
			success.WithJSONSchema(env)
		}
		op.Responses.Set(strconv.Itoa(r.Status), &openapi3.ResponseRef{Value: success})
		if r.Accepted {
			accepted := *success
			accepted.Description = new(http.StatusText(http.StatusAccepted) + " (queued)")
			op.Responses.Set("202", &openapi3.ResponseRef{Value: &accepted})
		}
		if r.EventStream {
			when := cmp.Or(r.StreamWhen, "stream is true")
			events := openapi3.NewContentWithSchema(openapi3.NewStringSchema().WithFormat("binary"), []string{"text/event-stream"})
			if r.Status == http.StatusOK {
				// The JSON answer and the stream share the status: one
				// response with both contents.
				success.Content["text/event-stream"] = events["text/event-stream"]
				*success.Description += "; Server-Sent Events when " + when
			} else {
				op.Responses.Set("200", &openapi3.ResponseRef{Value: openapi3.NewResponse().
					WithDescription("Server-Sent Events (when " + when + ")").WithContent(events)})
			}
		}
		if err := documentEvents(op, r, schemaOf); err != nil {
			return nil, err
		}
		for code := range errs {
			if code == http.StatusNotModified {
				op.Responses.Set("304", &openapi3.ResponseRef{Value: openapi3.NewResponse().WithDescription("Not modified (If-None-Match).")})
				continue
			}
			op.Responses.Set(strconv.Itoa(code), &openapi3.ResponseRef{Ref: "#/components/responses/" + strconv.Itoa(code)})
		}
		doc.AddOperation(r.Path, r.Method, op)
	}
	// Response types (named *Response) list every field as required: the
	// server always sends them, null where the type is a pointer.
	for t := range gen.Types {
		if t.Kind() != reflect.Struct || t == reflect.TypeOf(time.Time{}) {
			continue
		}
		if c := doc.Components.Schemas[t.Name()]; c != nil && c.Value != nil {
			c.Value.Required = requiredFields(t)
		}
		nullableRefs(t, doc.Components.Schemas)
		inlineTimestamps(t, doc.Components.Schemas)
		applyBindings(t, doc.Components.Schemas)
	}
	seen := map[*openapi3.Schema]bool{}
	for _, ref := range doc.Components.Schemas {
		nullEnums(ref.Value, seen)
	}
	doc.Servers = openapi3.Servers{{URL: "/", Description: "this server: every path starts with /api"}}
	delete(doc.Components.Schemas, timestampType.Name())
	for _, ref := range doc.Components.Schemas {
		if ref.Value != nil {
			sort.Strings(ref.Value.Required)
		}
	}
	b, err := json.MarshalIndent(doc, "", "  ")
	if err != nil {
		return nil, err
	}
	// Validate what will be served, loaded back as a client would load it.
	loader := openapi3.NewLoader()
	loaded, err := loader.LoadFromData(b)
	if err != nil {
		return nil, fmt.Errorf("openapi: %w", err)
	}
	if err := loaded.Validate(loader.Context); err != nil {
		return nil, fmt.Errorf("openapi: %w", err)
	}
	return append(b, '\n'), nil
}

// requiredFields: a field is required when its binding says so, or when the
// struct is a response type and the field is not omitempty.
func requiredFields(t reflect.Type) []string {
	isResponse := strings.HasSuffix(t.Name(), "Response")
	var out []string
	for i := 0; i < t.NumField(); i++ {
		f := t.Field(i)
		if f.Anonymous && f.Type.Kind() == reflect.Struct {
			out = append(out, requiredFields(f.Type)...)
			continue
		}
		name, opts, _ := strings.Cut(f.Tag.Get("json"), ",")
		if name == "-" || !f.IsExported() {
			continue
		}
		if name == "" {
			name = f.Name
		}
		binding := f.Tag.Get("binding")
		if strings.HasPrefix(binding, "required") || (isResponse && !strings.Contains(opts, "omitempty")) {
			out = append(out, name)
		}
	}
	return out
}

// nullableRefs marks the component schemas of structs that are used through
// pointers as nullable. (OpenAPI 3.0 allows a $ref no siblings, and
// kin-openapi does not accept null through an allOf wrapper.)
func nullableRefs(t reflect.Type, schemas openapi3.Schemas) {
	for i := 0; i < t.NumField(); i++ {
		f := t.Field(i)
		if f.Type.Kind() != reflect.Pointer || f.Type.Elem().Kind() != reflect.Struct || f.Type.Elem() == reflect.TypeOf(time.Time{}) ||
			f.Type.Elem() == timestampType {
			continue
		}
		if ref := schemas[f.Type.Elem().Name()]; ref != nil && ref.Value != nil {
			ref.Value.Nullable = true
		}
	}
}

var timestampType = reflect.TypeFor[server.Timestamp]()

// inlineTimestamps writes the fields of t that are server.Timestamp as what
// they are on the wire, an RFC 3339 string (nullable through a pointer),
// rather than as a reference to a component: OpenAPI 3.0 allows a $ref no
// nullable beside it.
func inlineTimestamps(t reflect.Type, schemas openapi3.Schemas) {
	ref := schemas[t.Name()]
	if ref == nil || ref.Value == nil {
		return
	}
	inlineTimestampFields(t, ref)
}

// inlineTimestampFields is inlineTimestamps for the fields of t, those of
// embedded structs included, in the schema ref.
func inlineTimestampFields(t reflect.Type, ref *openapi3.SchemaRef) {
	for i := 0; i < t.NumField(); i++ {
		f := t.Field(i)
		if f.Anonymous && f.Type.Kind() == reflect.Struct {
			inlineTimestampFields(f.Type, ref)
			continue
		}
		ft := f.Type
		if ft.Kind() == reflect.Pointer {
			ft = ft.Elem()
		}
		name, _, _ := strings.Cut(f.Tag.Get("json"), ",")
		if ft != timestampType || name == "" || ref.Value.Properties[name] == nil {
			continue
		}
		s := openapi3.NewDateTimeSchema()
		s.Nullable = f.Type.Kind() == reflect.Pointer
		_ = customizeSchema(name, ft, f.Tag, s)
		ref.Value.Properties[name] = s.NewRef()
	}
}

// customizeSchema adds what struct tags say that is not a rule: doc →
// description, enum → enum. The `binding` rules are declared by
// bindingSchema, which knows whether a schema is a field's or its items'.
func customizeSchema(_ string, _ reflect.Type, tag reflect.StructTag, s *openapi3.Schema) error {
	if d := tag.Get("doc"); d != "" {
		s.Description = d
	}
	if tag.Get("nullable") == "true" { // a slice or map that may be null, not only empty
		s.Nullable = true
	}
	if e := tag.Get("enum"); e != "" && len(s.Enum) == 0 {
		for _, v := range strings.Split(e, ",") {
			s.Enum = append(s.Enum, v)
		}
	}
	return nil
}

// bindingSchema declares a field's `binding` rules on its schema s, as the
// server checks them (server/rules.go): the rules before dive on the field
// (a slice's or map's size: minItems, maxItems, maxProperties), those
// after it on each item or map value; min and max are characters for a
// string and bounds for a number; oneof is an enum.
func bindingSchema(ft reflect.Type, binding string, s *openapi3.Schema) {
	if binding == "" || s == nil {
		return
	}
	for ft.Kind() == reflect.Pointer {
		ft = ft.Elem()
	}
	own, items, dive := strings.Cut(binding, ",dive")
	if !dive {
		own, items, dive = strings.Cut(binding, "dive")
	}
	for _, r := range strings.Split(own, ",") {
		k, v, _ := strings.Cut(r, "=")
		declareRule(ft.Kind(), k, v, s)
	}
	if !dive {
		return
	}
	items = strings.TrimPrefix(items, ",")
	switch {
	case ft.Kind() == reflect.Slice && s.Items != nil && s.Items.Ref == "":
		bindingSchema(ft.Elem(), items, s.Items.Value)
	case ft.Kind() == reflect.Map && s.AdditionalProperties.Schema != nil && s.AdditionalProperties.Schema.Ref == "":
		bindingSchema(ft.Elem(), items, s.AdditionalProperties.Schema.Value)
	}
}

func declareRule(kind reflect.Kind, k, v string, s *openapi3.Schema) {
	n, intErr := strconv.ParseUint(v, 10, 64)
	f, floatErr := strconv.ParseFloat(v, 64)
	switch {
	case k == "oneof":
		s.Enum = nil
		for _, x := range strings.Fields(v) {
			s.Enum = append(s.Enum, x)
		}
	case kind == reflect.String && intErr == nil && (k == "min" || k == "max"):
		if k == "min" {
			s.MinLength = n
		} else {
			s.MaxLength = &n
		}
	case kind == reflect.Slice && intErr == nil && (k == "min" || k == "max"):
		if k == "min" {
			s.MinItems = n
		} else {
			s.MaxItems = &n
		}
	case kind == reflect.Map && intErr == nil && (k == "min" || k == "max"):
		if k == "min" {
			s.MinProps = n
		} else {
			s.MaxProps = &n
		}
	case floatErr == nil && (s.Type.Is(openapi3.TypeInteger) || s.Type.Is(openapi3.TypeNumber)):
		switch k {
		case "min", "gte":
			s.Min = &f
		case "max", "lte":
			s.Max = &f
		case "gt":
			yes := true
			s.Min, s.ExclusiveMin = &f, openapi3.ExclusiveBound{Bool: &yes}
		}
	}
}

// applyBindings declares the binding rules of t's fields on the
// properties of its component schema (embedded structs' fields included);
// a property that is a reference (a struct) keeps only its own schema.
func applyBindings(t reflect.Type, schemas openapi3.Schemas) {
	if ref := schemas[t.Name()]; ref != nil && ref.Value != nil {
		applyFieldBindings(t, ref.Value)
	}
}

func applyFieldBindings(t reflect.Type, s *openapi3.Schema) {
	for i := 0; i < t.NumField(); i++ {
		f := t.Field(i)
		if f.Anonymous && f.Type.Kind() == reflect.Struct {
			applyFieldBindings(f.Type, s)
			continue
		}
		name, _, _ := strings.Cut(f.Tag.Get("json"), ",")
		prop := s.Properties[name]
		if name == "" || prop == nil || prop.Ref != "" || prop.Value == nil {
			continue
		}
		bindingSchema(f.Type, f.Tag.Get("binding"), prop.Value)
	}
}

// nullEnums lets every nullable enum hold null, as OpenAPI 3.0 wants of a
// value the server sends or takes as null (strict validators, ajv among
// them, otherwise refuse the null).
func nullEnums(s *openapi3.Schema, seen map[*openapi3.Schema]bool) {
	if s == nil || seen[s] {
		return
	}
	seen[s] = true
	if s.Nullable && len(s.Enum) > 0 && !slices.Contains(s.Enum, any(nil)) {
		s.Enum = append(s.Enum, nil)
	}
	for _, p := range s.Properties {
		if p.Ref == "" {
			nullEnums(p.Value, seen)
		}
	}
	if s.Items != nil && s.Items.Ref == "" {
		nullEnums(s.Items.Value, seen)
	}
	if ap := s.AdditionalProperties.Schema; ap != nil && ap.Ref == "" {
		nullEnums(ap.Value, seen)
	}
}

// requiredForms lists the `form` names of a struct's required fields.
func requiredForms(t reflect.Type) []string {
	var out []string
	for i := 0; i < t.NumField(); i++ {
		f := t.Field(i)
		if slices.Contains(strings.Split(f.Tag.Get("binding"), ","), "required") {
			out = append(out, strings.Split(f.Tag.Get("form"), ",")[0])
		}
	}
	return out
}

// queryParams lists the query parameters of a struct with `form` tags.
func queryParams(t reflect.Type) []*openapi3.Parameter {
	var out []*openapi3.Parameter
	for i := 0; i < t.NumField(); i++ {
		f := t.Field(i)
		if f.Anonymous {
			out = append(out, queryParams(f.Type)...)
			continue
		}
		name := strings.Split(f.Tag.Get("form"), ",")[0]
		if name == "" || name == "-" {
			continue
		}
		ft := f.Type
		if ft.Kind() == reflect.Pointer {
			ft = ft.Elem()
		}
		var schema *openapi3.Schema
		switch ft.Kind() {
		case reflect.Bool:
			schema = openapi3.NewBoolSchema()
		case reflect.Int, reflect.Int64, reflect.Int32:
			schema = openapi3.NewIntegerSchema()
		default:
			schema = openapi3.NewStringSchema()
		}
		if ft == reflect.TypeOf(time.Time{}) {
			schema = openapi3.NewDateTimeSchema()
		}
		_ = customizeSchema(name, ft, f.Tag, schema)
		bindingSchema(ft, f.Tag.Get("binding"), schema)
		p := openapi3.NewQueryParameter(name).WithSchema(schema).WithDescription(f.Tag.Get("doc"))
		out = append(out, p)
	}
	return out
}

func operationID(method, path string) string {
	var b strings.Builder
	b.WriteString(strings.ToLower(method))
	for _, seg := range strings.Split(strings.TrimPrefix(path, "/api"), "/") {
		seg = strings.Trim(seg, "{}")
		for _, part := range strings.FieldsFunc(seg, func(r rune) bool { return r == '-' || r == '_' || r == '.' }) {
			b.WriteString(strings.ToUpper(part[:1]) + part[1:])
		}
	}
	return b.String()
}

// documentEvents describes the events of a route's text/event-stream
// answer as the extension x-events of that content: a list of {event,
// description, data} where data is the schema of the event's JSON. OpenAPI
// 3.0 has no way to say what a stream carries (3.2's itemSchema is not
// read by 3.0 tools), and an extension keeps the document valid for them.
// A stream without Events is an error: every stream is described.
func documentEvents(op *openapi3.Operation, r *server.Route, schemaOf func(any) (*openapi3.SchemaRef, error)) error {
	var media *openapi3.MediaType
	for _, resp := range op.Responses.Map() {
		if resp.Value != nil && resp.Value.Content["text/event-stream"] != nil {
			media = resp.Value.Content["text/event-stream"]
		}
	}
	switch {
	case media == nil && len(r.Events) > 0:
		return fmt.Errorf("%s %s: Events, but no text/event-stream answer", r.Method, r.Path)
	case media == nil:
		return nil
	case len(r.Events) == 0:
		return fmt.Errorf("%s %s: a text/event-stream answer needs Events (server/events.go)", r.Method, r.Path)
	}
	var events []map[string]any
	for _, ev := range r.Events {
		e := map[string]any{"event": ev.Name, "description": ev.Doc}
		if ev.Data != nil {
			ref, err := schemaOf(ev.Data)
			if err != nil {
				return fmt.Errorf("%s %s event %s: %w", r.Method, r.Path, ev.Name, err)
			}
			e["data"] = ref
		}
		events = append(events, e)
	}
	media.Extensions = map[string]any{"x-events": events}
	media.Schema.Value.Description = "Server-Sent Events: `event:` names one of x-events, `data:` is its JSON, `id:` resumes with Last-Event-ID; a comment line every 15 seconds is a heartbeat."
	if r.Progress {
		media.Schema.Value.Description = "Server-Sent Events of this request's progress: `event:` names one of x-events, `data:` is its JSON; the stream ends after its last event (no id, nothing to resume)."
	}
	return nil
}

// errorFields is the Error schema's fields: the request's fields a 422 is
// about, when it names several.
func errorFields() *openapi3.SchemaRef {
	s := openapi3.NewArraySchema().WithItems(openapi3.NewStringSchema())
	s.Description = "the request's fields a 422 is about, when it names several (variables.<name> for each missing variable); detail says the same in words"
	return s.NewRef()
}
