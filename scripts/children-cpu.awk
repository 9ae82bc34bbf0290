# CPU seconds (user and system) of a shell's finished children, from bash's `times` output (its
# last line: "1m2.5s 0m3.1s"), whole seconds. Used by scripts/test.sh and .ci/run.
{ gsub(/[ms]/, " "); cpu = $1 * 60 + $2 + $3 * 60 + $4 }
END { printf "%.0f\n", cpu }
