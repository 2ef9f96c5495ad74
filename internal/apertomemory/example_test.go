package apertomemory_test

import (
	"fmt"
	"log"

	"github.com/memtrail/memtrail/internal/apertomemory"
)

// Write a vault with one memory, then open it as a reader would and frame
// the memory for a context window.
func Example() {
	pass := []byte("correct horse battery staple")
	w, err := apertomemory.NewWriter(pass)
	if err != nil {
		log.Fatal(err)
	}
	if _, err := w.AddScope("work"); err != nil {
		log.Fatal(err)
	}
	if _, err := w.Seal("work", &apertomemory.Memory{Type: apertomemory.Semantic,
		Content: "prefers formal B2B emails", Confidence: 0.9, Tool: "example/1", Created: 1750000000}); err != nil {
		log.Fatal(err)
	}
	data := w.Bytes()

	c, err := apertomemory.ParseContainer(data)
	if err != nil {
		log.Fatal(err)
	}
	v, err := c.Open(pass, nil) // one Argon2id run for the whole vault
	if err != nil {
		log.Fatal(err)
	}
	for _, e := range v.Entries {
		if e.Err != nil {
			fmt.Println("refused:", apertomemory.RefusalOf(e.Err).Code)
			continue
		}
		o := e.Object
		fmt.Println(e.Scope, o.Trust, o.Authorship, *o.Author == v.Keyring.Owner())
		fmt.Print(string(o.ContextFragment())[:len("[ApertoMemory trust=self authorship=signed")])
	}
	// Output:
	// work self signed true
	// [ApertoMemory trust=self authorship=signed
}
