#!/usr/bin/env bash
# Makes a Go toolchain available for the Go worker (drivers/go needs Go >= 1.23).
# A `go` on PATH is used as it is. On Debian 12 (bookworm) without one, this adds the
# bookworm-backports suite (same mirror as the system's main Debian source) if it is missing
# and installs golang-1.23-go from it; the toolchain lands in /usr/lib/go-1.23/bin, which the
# Makefile puts on PATH. Elsewhere it says what to install and fails.
set -euo pipefail
GO_PKG=golang-1.23-go
GO_BIN=/usr/lib/go-1.23/bin
SUDO=""
[ "$(id -u)" = 0 ] || SUDO=sudo

if command -v go >/dev/null || [ -x "$GO_BIN/go" ]; then
	exit 0
fi
. /etc/os-release
if [ "${VERSION_CODENAME:-}" != bookworm ]; then
	echo "go not found: install Go 1.23 or later (the Go worker drivers/go needs it), then run make again" >&2
	exit 1
fi

# The mirror the system already uses for Debian's main suite.
mirror=$( (grep -hs -E '^(URIs:|deb )' /etc/apt/sources.list.d/*.sources /etc/apt/sources.list.d/*.list /etc/apt/sources.list || true) \
	| grep -v -e security | head -n1 | awk '{ print $2 }')
if [ -z "$mirror" ]; then
	echo "cannot find the Debian mirror in /etc/apt/sources.list*: add bookworm-backports by hand, then install $GO_PKG" >&2
	exit 1
fi
if ! grep -qsr bookworm-backports /etc/apt/sources.list /etc/apt/sources.list.d/; then
	echo "adding the bookworm-backports suite ($mirror) for $GO_PKG"
	printf 'Types: deb\nURIs: %s\nSuites: bookworm-backports\nComponents: main\nSigned-By: /usr/share/keyrings/debian-archive-keyring.gpg\n' "$mirror" \
		| $SUDO tee /etc/apt/sources.list.d/bookworm-backports.sources >/dev/null
fi
echo "installing $GO_PKG from bookworm-backports (Go for the Go worker)"
$SUDO apt-get update -qq
DEBIAN_FRONTEND=noninteractive $SUDO apt-get install -y -qq -t bookworm-backports "$GO_PKG"
"$GO_BIN/go" version
