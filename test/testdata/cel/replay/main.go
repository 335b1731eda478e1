// Command replay runs test/testdata/cel/selectors.yaml through the CEL package kube-scheduler
// itself uses (k8s.io/dynamic-resource-allocation/cel, stored-expressions environment, both
// DRA feature gates on, as the scheduler compiles selectors) and reports every row whose
// outcome differs from the table: the table's expectations are upstream's, not Berth's.
//
//	cd test/testdata/cel/replay && GOTOOLCHAIN=local GOFLAGS=-mod=mod go run . ../selectors.yaml
//
// With -json it prints each row's outcome and cost instead, for comparing Berth's evaluator
// with upstream's cost accounting.
package main

import (
	"context"
	"encoding/json"
	"flag"
	"fmt"
	"os"
	"strings"

	resourceapi "k8s.io/api/resource/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	dracel "k8s.io/dynamic-resource-allocation/cel"
	"sigs.k8s.io/yaml"
)

type attribute struct {
	Bool     *bool    `json:"bool"`
	Int      *int64   `json:"int"`
	String   *string  `json:"string"`
	Version  *string  `json:"version"`
	Bools    []bool   `json:"bools"`
	Ints     []int64  `json:"ints"`
	Strings  []string `json:"strings"`
	Versions []string `json:"versions"`
}

type device struct {
	Driver     string               `json:"driver"`
	Multi      *bool                `json:"allowMultipleAllocations"`
	Attributes map[string]attribute `json:"attributes"`
	Capacity   map[string]string    `json:"capacity"`
}

type row struct {
	Expression string  `json:"expression"`
	Device     device  `json:"device"`
	Match      *bool   `json:"match"`
	Error      *string `json:"error"`
}

type outcome struct {
	Expression string `json:"expression"`
	Match      bool   `json:"match"`
	Error      string `json:"error"`
	Cost       uint64 `json:"cost"`
}

func evaluate(cache *dracel.Cache, r row) outcome {
	d := dracel.Device{Driver: r.Device.Driver, AllowMultipleAllocations: r.Device.Multi,
		Attributes: map[resourceapi.QualifiedName]resourceapi.DeviceAttribute{},
		Capacity:   map[resourceapi.QualifiedName]resourceapi.DeviceCapacity{}}
	for name, a := range r.Device.Attributes {
		d.Attributes[resourceapi.QualifiedName(name)] = resourceapi.DeviceAttribute{
			BoolValue: a.Bool, IntValue: a.Int, StringValue: a.String, VersionValue: a.Version,
			BoolValues: a.Bools, IntValues: a.Ints, StringValues: a.Strings, VersionValues: a.Versions}
	}
	for name, c := range r.Device.Capacity {
		d.Capacity[resourceapi.QualifiedName(name)] = resourceapi.DeviceCapacity{Value: resource.MustParse(c)}
	}
	o := outcome{Expression: r.Expression}
	compiled := cache.GetOrCompile(r.Expression)
	if compiled.Error != nil {
		o.Error = compiled.Error.Error()
		return o
	}
	match, details, err := compiled.DeviceMatches(context.Background(), d)
	if details != nil && details.ActualCost() != nil {
		o.Cost = *details.ActualCost()
	}
	if err != nil {
		o.Error = err.Error()
	} else {
		o.Match = match
	}
	return o
}

func main() {
	asJSON := flag.Bool("json", false, "print every row's outcome and cost as JSON")
	flag.Parse()
	data, err := os.ReadFile(flag.Arg(0))
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(2)
	}
	var table struct {
		Rows []row `json:"rows"`
	}
	if err := yaml.Unmarshal(data, &table); err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(2)
	}
	cache := dracel.NewCache(10, dracel.Features{EnableConsumableCapacity: true, EnableListTypeAttributes: true})
	var outcomes []outcome
	failed := 0
	for _, r := range table.Rows {
		o := evaluate(cache, r)
		outcomes = append(outcomes, o)
		ok := false
		switch {
		case r.Error != nil:
			ok = o.Error != "" && strings.Contains(o.Error, *r.Error)
		case r.Match != nil:
			ok = o.Error == "" && o.Match == *r.Match
		}
		if !ok && !*asJSON {
			failed++
			fmt.Printf("row %q: upstream gives match=%v error=%q\n", r.Expression, o.Match, o.Error)
		}
	}
	if *asJSON {
		out, _ := json.MarshalIndent(outcomes, "", " ")
		fmt.Println(string(out))
		return
	}
	fmt.Printf("%d rows, %d differ from upstream\n", len(table.Rows), failed)
	if failed > 0 {
		os.Exit(1)
	}
}
