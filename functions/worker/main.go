// Command worker is the Warrant worker Lambda. Its wiring (configuration, clients,
// handler, lambda.Start) is internal/wire's, shared by all the functions.
package main

import (
	"github.com/seed-f6d3920e/warrant/internal/wire"
	"github.com/seed-f6d3920e/warrant/pkg/config"
)

func main() { wire.Main(config.Worker) }
