# The two set-up commands (see README.md) are `make up` and `make test`.

DEBIAN_PACKAGES := etcd-server etcd-client protobuf-compiler libprotobuf-dev binutils \
	containerd runc containernetworking-plugins docker-registry skopeo busybox-static \
	nftables iptables iproute2 util-linux procps tar gcc libc6-dev curl

.PHONY: deps build images up down test lint bench

deps:
	@scripts/deps.sh $(DEBIAN_PACKAGES)

build: deps
	cargo build --release --locked -p kyb
	@scripts/split-debug.sh target/release/kyb

# The sandbox (pause) and busybox images as OCI archives under target/images/.
images: build
	@scripts/images.sh target/release/kyb

up: build images
	@scripts/up.sh

down:
	@scripts/down.sh

lint: deps
	cargo fmt --all -- --check
	cargo clippy --workspace --all-targets --locked -- -D warnings

test: lint
	cargo nextest run --workspace --locked --no-fail-fast

bench: deps
	cargo build --release --locked -p kyb -p kyb-bench
	target/release/kyb-bench storage
	target/release/kyb-bench apiserver
	target/release/kyb-bench apf
	target/release/kyb-bench lists
	target/release/kyb-bench scheduler
	target/release/kyb-bench pods
	target/release/kyb-bench streaming
