#!/bin/sh
# Makes a throw-away certificate authority and a server certificate for 127.0.0.1 / localhost,
# for the HTTPS tests of the Hub client (docs/hub.md "Testing"): hub_server.py --tls server.pem
# server.key, and the client trusts it through CURL_CA_BUNDLE=ca.pem.
# Usage: make_certs.sh DIR   (writes DIR/ca.pem, DIR/ca.key, DIR/server.pem, DIR/server.key)
set -eu
dir=${1:?usage: make_certs.sh DIR}
mkdir -p "$dir"
cd "$dir"
openssl req -x509 -newkey rsa:2048 -nodes -days 2 -subj "/CN=Colibri test CA" \
    -keyout ca.key -out ca.pem \
    -addext "basicConstraints=critical,CA:TRUE" -addext "keyUsage=critical,keyCertSign,cRLSign" \
    2>/dev/null
openssl req -newkey rsa:2048 -nodes -subj "/CN=127.0.0.1" -keyout server.key -out server.csr \
    2>/dev/null
printf '%s\n' "subjectAltName=IP:127.0.0.1,DNS:localhost" "basicConstraints=CA:FALSE" \
    "extendedKeyUsage=serverAuth" >server.ext
openssl x509 -req -in server.csr -CA ca.pem -CAkey ca.key -CAcreateserial -days 2 \
    -extfile server.ext -out server.pem 2>/dev/null
rm -f server.csr server.ext ca.srl
