// Command broken does not compile, on purpose: localapi's build-failure test.
package main

func main() { undefinedThing() }
