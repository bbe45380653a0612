$points << EOD
12722266 1286363.85120704 177.90180249933528 "R64 c1" 0 1 1
12722458 1285566.3161031771 177.59542900330555 "R64 c2" 0 1 1
12722842 1282426.5981365256 184.96139687190794 "R64 c4" 0 0 0
12869914 1079142.5459317451 176.94024408607598 "R128 c1" 0 1 1
12870298 1083029.5781525362 186.01765136480489 "R128 c2" 0 0 0
12871066 1100707.4156832525 177.80562609887872 "R128 c4" 0 0 0
EOD
$front_params << EOD
12722266 177.90180249933528
12722458 177.59542900330555
12869914 176.94024408607598
EOD
$front_tps << EOD
1286363.85120704 177.90180249933528
1285566.3161031771 177.59542900330555
1079142.5459317451 176.94024408607598
EOD
set grid
set logscale x
set logscale y
set key outside below horizontal font ',9'
set format x '%.3s%c'
set format y '%.4g'
set terminal pngcairo size 1400,560
set output '/tmp/parts22/c2/wt2/sweep.png'
set multiplot layout 1,2
set xtics ("12.4M" 12400000, "12.5M" 12500000, "12.6M" 12600000, "12.7M" 12700000, "12.8M" 12800000, "12.9M" 12900000, "13M" 13000000, "13.1M" 13100000, "13.2M" 13200000)
set ytics ("165" 165, "170" 170, "175" 175, "180" 180, "185" 185, "190" 190, "195" 195, "200" 200)
set xlabel 'parameters'
set ylabel 'test perplexity'
set xrange [1.23445e+07:1.32649e+07]
set yrange [163.424:201.402]
plot $points using 1:(column(5) == 0 ? column(3) : NaN) with points pt 7 ps 1.3 lc 1 title 'tensorized-causal', $points using 1:3:(column(6) > 0 ? stringcolumn(4) : '') with labels offset 0,0.9 font ',8' notitle, $front_params using 1:2 with steps lw 2 lc rgb 'gray50' title 'Pareto front'
set xtics ("1.05M" 1050000, "1.1M" 1100000, "1.15M" 1150000, "1.2M" 1200000, "1.25M" 1250000, "1.3M" 1300000)
set ytics ("165" 165, "170" 170, "175" 175, "180" 180, "185" 185, "190" 190, "195" 195, "200" 200)
set xlabel 'training tokens/s (over each training run)'
set ylabel 'test perplexity'
set xrange [1.03855e+06:1.33664e+06]
set yrange [163.424:201.402]
plot $points using 2:(column(5) == 0 ? column(3) : NaN) with points pt 7 ps 1.3 lc 1 title 'tensorized-causal', $points using 2:3:(column(7) > 0 ? stringcolumn(4) : '') with labels offset 0,0.9 font ',8' notitle, $front_tps using 1:2 with steps lw 2 lc rgb 'gray50' title 'Pareto front'
unset multiplot
set terminal svg size 1400,560
set output '/tmp/parts22/c2/wt2/sweep.svg'
set multiplot layout 1,2
set xtics ("12.4M" 12400000, "12.5M" 12500000, "12.6M" 12600000, "12.7M" 12700000, "12.8M" 12800000, "12.9M" 12900000, "13M" 13000000, "13.1M" 13100000, "13.2M" 13200000)
set ytics ("165" 165, "170" 170, "175" 175, "180" 180, "185" 185, "190" 190, "195" 195, "200" 200)
set xlabel 'parameters'
set ylabel 'test perplexity'
set xrange [1.23445e+07:1.32649e+07]
set yrange [163.424:201.402]
plot $points using 1:(column(5) == 0 ? column(3) : NaN) with points pt 7 ps 1.3 lc 1 title 'tensorized-causal', $points using 1:3:(column(6) > 0 ? stringcolumn(4) : '') with labels offset 0,0.9 font ',8' notitle, $front_params using 1:2 with steps lw 2 lc rgb 'gray50' title 'Pareto front'
set xtics ("1.05M" 1050000, "1.1M" 1100000, "1.15M" 1150000, "1.2M" 1200000, "1.25M" 1250000, "1.3M" 1300000)
set ytics ("165" 165, "170" 170, "175" 175, "180" 180, "185" 185, "190" 190, "195" 195, "200" 200)
set xlabel 'training tokens/s (over each training run)'
set ylabel 'test perplexity'
set xrange [1.03855e+06:1.33664e+06]
set yrange [163.424:201.402]
plot $points using 2:(column(5) == 0 ? column(3) : NaN) with points pt 7 ps 1.3 lc 1 title 'tensorized-causal', $points using 2:3:(column(7) > 0 ? stringcolumn(4) : '') with labels offset 0,0.9 font ',8' notitle, $front_tps using 1:2 with steps lw 2 lc rgb 'gray50' title 'Pareto front'
unset multiplot
