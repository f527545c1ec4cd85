package webhook_test

import (
	"encoding/base64"
	"fmt"
	"time"

	"github.com/edgeplane/edgeplane/webhook"
)

// Sign makes the webhook-signature header of an event: the key is the
// base64 after "whsec_" in the destination's secret.
func ExampleSign() {
	key, _ := base64.StdEncoding.DecodeString("MfKQ9r8GKYqrTwjUPD8ILPZIo2LaLaSw")
	sig, _ := webhook.Sign(key, "msg_p5jXN8AQM9LWM0D4loKWxJek", time.Unix(1614265330, 0), []byte(`{"test": 2432232314}`))
	fmt.Println(sig)
	// Output: v1,g0hM9SsE+OTPJTGt/tmIKtSyZlE3uFJELVlNIOLJ1OE=
}
