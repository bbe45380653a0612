$points << EOD
12593074 1335554.6147893604 129.564885059917 "R8 c1 u" 1 1 1
12593098 1318909.3693705192 129.0090842831828 "R8 c2 u" 1 1 0
12593146 1305873.9576291479 130.96788664050021 "R8 c4 u" 1 0 0
12611530 1291285.1070282916 103.07877116315117 "R16 c1 u" 1 1 0
12611578 1300205.381168928 101.3340121797542 "R16 c2 u" 1 1 0
12611674 1311549.5718602345 98.861227924495864 "R16 c4 u" 1 1 0
12666898 1295523.3471851 59.747830883479189 "R40 c1 u" 1 1 0
12667018 1316035.9811148045 57.816203039104238 "R40 c2 u" 1 1 0
12667258 1327824.4684912828 57.664113888885282 "R40 c4 u" 1 1 1
EOD
$front_params << EOD
12593074 129.564885059917
12593098 129.0090842831828
12611530 103.07877116315117
12611578 101.3340121797542
12611674 98.861227924495864
12666898 59.747830883479189
12667018 57.816203039104238
12667258 57.664113888885282
EOD
$front_tps << EOD
1335554.6147893604 129.564885059917
1327824.4684912828 57.664113888885282
EOD
set grid
set logscale x
set logscale y
set key outside below horizontal font ',9'
set format x '%.3s%c'
set format y '%.4g'
set terminal pngcairo size 1400,560
set output '/tmp/parts22/u1/wt2/sweep.png'
set multiplot layout 1,2
set xtics ("12.3M" 12300000, "12.4M" 12400000, "12.5M" 12500000, "12.6M" 12600000, "12.7M" 12700000, "12.8M" 12800000, "12.9M" 12900000, "13M" 13000000)
set ytics ("60" 60, "70" 70, "80" 80, "90" 90, "100" 100, "110" 110, "120" 120, "130" 130, "140" 140)
set xlabel 'parameters'
set ylabel 'test perplexity'
set xrange [1.22227e+07:1.30511e+07]
set yrange [51.2471:147.367]
plot $points using 1:(column(5) == 1 ? column(3) : NaN) with points pt 7 ps 1.3 lc 2 title 'tensorized-unmasked', $points using 1:3:(column(6) > 0 ? stringcolumn(4) : '') with labels offset 0,0.9 font ',8' notitle, $front_params using 1:2 with steps lw 2 lc rgb 'gray50' title 'Pareto front'
set xtics ("1.26M" 1260000, "1.28M" 1280000, "1.3M" 1300000, "1.32M" 1320000, "1.34M" 1340000, "1.36M" 1360000)
set ytics ("60" 60, "70" 70, "80" 80, "90" 90, "100" 100, "110" 110, "120" 120, "130" 130, "140" 140)
set xlabel 'training tokens/s (over each training run)'
set ylabel 'test perplexity'
set xrange [1.25156e+06:1.37794e+06]
set yrange [51.2471:147.367]
plot $points using 2:(column(5) == 1 ? column(3) : NaN) with points pt 7 ps 1.3 lc 2 title 'tensorized-unmasked', $points using 2:3:(column(7) > 0 ? stringcolumn(4) : '') with labels offset 0,0.9 font ',8' notitle, $front_tps using 1:2 with steps lw 2 lc rgb 'gray50' title 'Pareto front'
unset multiplot
set terminal svg size 1400,560
set output '/tmp/parts22/u1/wt2/sweep.svg'
set multiplot layout 1,2
set xtics ("12.3M" 12300000, "12.4M" 12400000, "12.5M" 12500000, "12.6M" 12600000, "12.7M" 12700000, "12.8M" 12800000, "12.9M" 12900000, "13M" 13000000)
set ytics ("60" 60, "70" 70, "80" 80, "90" 90, "100" 100, "110" 110, "120" 120, "130" 130, "140" 140)
set xlabel 'parameters'
set ylabel 'test perplexity'
set xrange [1.22227e+07:1.30511e+07]
set yrange [51.2471:147.367]
plot $points using 1:(column(5) == 1 ? column(3) : NaN) with points pt 7 ps 1.3 lc 2 title 'tensorized-unmasked', $points using 1:3:(column(6) > 0 ? stringcolumn(4) : '') with labels offset 0,0.9 font ',8' notitle, $front_params using 1:2 with steps lw 2 lc rgb 'gray50' title 'Pareto front'
set xtics ("1.26M" 1260000, "1.28M" 1280000, "1.3M" 1300000, "1.32M" 1320000, "1.34M" 1340000, "1.36M" 1360000)
set ytics ("60" 60, "70" 70, "80" 80, "90" 90, "100" 100, "110" 110, "120" 120, "130" 130, "140" 140)
set xlabel 'training tokens/s (over each training run)'
set ylabel 'test perplexity'
set xrange [1.25156e+06:1.37794e+06]
set yrange [51.2471:147.367]
plot $points using 2:(column(5) == 1 ? column(3) : NaN) with points pt 7 ps 1.3 lc 2 title 'tensorized-unmasked', $points using 2:3:(column(7) > 0 ? stringcolumn(4) : '') with labels offset 0,0.9 font ',8' notitle, $front_tps using 1:2 with steps lw 2 lc rgb 'gray50' title 'Pareto front'
unset multiplot
