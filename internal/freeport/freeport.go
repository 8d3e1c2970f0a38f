// Package freeport finds free TCP ports on 127.0.0.1 for the servers that
// tests and benchmarks start as child processes (ZooKeeper, MariaDB,
// beluga), which must be told their port before they listen.
package freeport

import (
	"fmt"
	"net"
)

// Take reserves n distinct free ports: they are held open together, so no
// two are the same, then released for the processes.
func Take(n int) ([]int, error) {
	var ls []net.Listener
	defer func() {
		for _, l := range ls {
			l.Close()
		}
	}()
	ports := make([]int, 0, n)
	for range n {
		l, err := net.Listen("tcp", "127.0.0.1:0")
		if err != nil {
			return nil, fmt.Errorf("free port: %w", err)
		}
		ls = append(ls, l)
		ports = append(ports, l.Addr().(*net.TCPAddr).Port)
	}
	return ports, nil
}

// One returns one free port.
func One() (int, error) {
	p, err := Take(1)
	if err != nil {
		return 0, err
	}
	return p[0], nil
}
