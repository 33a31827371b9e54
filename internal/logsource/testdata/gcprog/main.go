// Command gcprog allocates steadily so that, run with GODEBUG=gctrace=1,
// it prints real gc lines to stderr, and prints a counter to stdout.
package main

import (
	"fmt"
	"time"
)

var sink [][]byte

func main() {
	for i := 0; ; i++ {
		for j := 0; j < 300; j++ {
			sink = append(sink, make([]byte, 8192))
			if len(sink) > 256 {
				sink = sink[:0]
			}
		}
		if i%50 == 0 {
			fmt.Println("tick", i)
		}
		time.Sleep(time.Millisecond)
	}
}
