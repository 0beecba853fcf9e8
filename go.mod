module github.com/chatgw/gateway

go 1.26.8

require (
	github.com/google/go-cmp v0.7.0
	github.com/julienschmidt/httprouter v1.3.0
	github.com/sethvargo/go-envconfig v1.4.3
	github.com/tmaxmax/go-sse v0.11.0
	go.etcd.io/bbolt v1.5.0
)

require golang.org/x/sys v0.45.0 // indirect
