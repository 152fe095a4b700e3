#!/bin/sh
# Makes the admission webhook's TLS: a self-signed CA and a serving certificate for the webhook's Service, stored as
# the Secret its Deployment mounts, and the CA put into the ValidatingWebhookConfiguration's caBundle; then restarts
# the Deployment if it runs, so it serves the new certificate. Run it after `kubectl apply -k manifests/webhook/`,
# and again to renew (the certificate is valid for DAYS days). Needs openssl and kubectl (current context).
#
# Every name can be changed through the environment, e.g. for an overlay in another namespace:
#   NAMESPACE=jobflow manifests/webhook/make-cert.sh
# EXTRA_SANS adds subject alternative names, e.g. EXTRA_SANS=IP:127.0.0.1 for a webhook the API server reaches by
# URL on loopback (the tests do that). OUT_DIR keeps the files (ca.crt, tls.crt, tls.key) instead of a temporary
# directory; KUBECTL names the kubectl to use.
set -eu

NAMESPACE=${NAMESPACE:-volcano-jobflow}
SERVICE=${SERVICE:-jobflow-admission}
SECRET=${SECRET:-jobflow-admission-tls}
WEBHOOK_CONFIGURATION=${WEBHOOK_CONFIGURATION:-jobflow-admission}
DAYS=${DAYS:-365}
EXTRA_SANS=${EXTRA_SANS:-}
KUBECTL=${KUBECTL:-kubectl}

if [ -n "${OUT_DIR:-}" ]; then
  mkdir -p "$OUT_DIR"
  DIR=$OUT_DIR
else
  DIR=$(mktemp -d)
  trap 'rm -rf "$DIR"' EXIT
fi
cd "$DIR"

SANS="DNS:$SERVICE,DNS:$SERVICE.$NAMESPACE,DNS:$SERVICE.$NAMESPACE.svc,DNS:$SERVICE.$NAMESPACE.svc.cluster.local"
[ -z "$EXTRA_SANS" ] || SANS="$SANS,$EXTRA_SANS"
printf 'subjectAltName=%s\nextendedKeyUsage=serverAuth\n' "$SANS" > serving.ext

openssl req -x509 -newkey rsa:2048 -nodes -keyout ca.key -out ca.crt -days "$DAYS" \
  -subj "/CN=$SERVICE-ca" 2>/dev/null
openssl req -newkey rsa:2048 -nodes -keyout tls.key -out tls.csr -subj "/CN=$SERVICE.$NAMESPACE.svc" 2>/dev/null
openssl x509 -req -in tls.csr -CA ca.crt -CAkey ca.key -CAcreateserial -out tls.crt -days "$DAYS" \
  -extfile serving.ext 2>/dev/null
echo "made a CA and a certificate for $SANS, valid for $DAYS days"

"$KUBECTL" --namespace "$NAMESPACE" create secret tls "$SECRET" --cert tls.crt --key tls.key \
  --dry-run=client --output yaml | "$KUBECTL" apply --filename -

CA_BUNDLE=$(base64 < ca.crt | tr -d '\n')
COUNT=$("$KUBECTL" get validatingwebhookconfiguration "$WEBHOOK_CONFIGURATION" \
  --output 'jsonpath={range .webhooks[*]}x{end}' | wc -c)
PATCH=""
i=0
while [ "$i" -lt "$COUNT" ]; do
  PATCH="$PATCH${PATCH:+,}{\"op\":\"add\",\"path\":\"/webhooks/$i/clientConfig/caBundle\",\"value\":\"$CA_BUNDLE\"}"
  i=$((i + 1))
done
"$KUBECTL" patch validatingwebhookconfiguration "$WEBHOOK_CONFIGURATION" --type json --patch "[$PATCH]"

if "$KUBECTL" --namespace "$NAMESPACE" get deployment "$SERVICE" >/dev/null 2>&1; then
  "$KUBECTL" --namespace "$NAMESPACE" rollout restart deployment "$SERVICE"
fi
