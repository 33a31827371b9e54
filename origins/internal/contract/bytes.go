package contract

// Alphabet is the /bytes pattern: byte i of every /bytes body is
// Alphabet[i%36].
const Alphabet = "abcdefghijklmnopqrstuvwxyz0123456789"

// pattern holds the largest /bytes body once; every answer is a prefix of
// it, so serving /bytes costs no generation and no allocation. 16 MiB of
// read-only memory per process is cheap next to what it saves under load.
var pattern = func() []byte {
	b := make([]byte, MaxBytes)
	for i := 0; i < len(b); i += len(Alphabet) {
		copy(b[i:], Alphabet)
	}
	return b
}()

// Bytes returns the /bytes/{n} body for 0 <= n <= MaxBytes. Callers must not
// modify it.
func Bytes(n int) []byte { return pattern[:n:n] }
