#!/bin/bash
. "${top_srcdir:-$(dirname "$0")/..}/tests/lib.sh"
skip "not written yet"
