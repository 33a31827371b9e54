//go:build !linux

package attack

import "errors"

const evLoopAvailable = false

func (r *run) launchEvLoop(*request) error { return errors.New("the event loop needs Linux") }
