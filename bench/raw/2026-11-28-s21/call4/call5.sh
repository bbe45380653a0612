mkdir -p $OUT/wt2 && cp /tmp/sw/wt2/*.csv $OUT/wt2/   # call 5, the same warm machine: wt2 files the reply of call 4 left out (8 files a reply)
