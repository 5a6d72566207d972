module github.com/dynamic-mcp/dynamic-mcp

go 1.26.8

require (
	github.com/hashicorp/go-multierror v1.1.1
	gopkg.in/yaml.v3 v3.0.1
)

require (
	github.com/hashicorp/errwrap v1.0.0 // indirect
	gopkg.in/check.v1 v1.0.0-20201130134442-10cb98267c6c // indirect
)
