module github.com/plancore/plancore

go 1.26.0

require (
	github.com/google/go-cmp v0.7.0 // indirect
	github.com/stretchr/testify v1.12.1 // indirect
	golang.org/x/sync v0.24.0 // indirect
	k8s.io/api v0.31.14 // indirect
	k8s.io/apimachinery v0.31.14 // indirect
	pgregory.net/rapid v1.3.0 // indirect
)
