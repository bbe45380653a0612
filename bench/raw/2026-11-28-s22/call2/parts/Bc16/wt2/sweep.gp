$points << EOD
12611530 1332910 191.05792600000001 "R16 c1" 0 1 0
12611578 1335610 184.73059599999999 "R16 c2" 0 1 1
12611674 1349120 189.99832799999999 "R16 c4" 0 0 1
EOD
$front_params << EOD
12611530 191.05792600000001
12611578 184.73059599999999
EOD
$front_tps << EOD
1349120 189.99832799999999
1335610 184.73059599999999
EOD
set grid
set logscale x
set logscale y
set key outside below horizontal font ',9'
set format x '%.3s%c'
set format y '%.4g'
set terminal pngcairo size 1400,560
set output '/tmp/parts22b/Bc16/wt2/sweep.png'
set multiplot layout 1,2
set xtics ("12.3M" 12300000, "12.4M" 12400000, "12.5M" 12500000, "12.6M" 12600000, "12.7M" 12700000, "12.8M" 12800000, "12.9M" 12900000)
set ytics ("175" 175, "180" 180, "185" 185, "190" 190, "195" 195, "200" 200, "205" 205)
set xlabel 'parameters'
set ylabel 'test perplexity'
set xrange [1.22442e+07:1.299e+07]
set yrange [170.759:206.69]
plot $points using 1:(column(5) == 0 ? column(3) : NaN) with points pt 7 ps 1.3 lc 1 title 'tensorized-causal', $points using 1:3:(column(6) > 0 ? stringcolumn(4) : '') with labels offset 0,0.9 font ',8' notitle, $front_params using 1:2 with steps lw 2 lc rgb 'gray50' title 'Pareto front'
set xtics ("1.3M" 1300000, "1.31M" 1310000, "1.32M" 1320000, "1.33M" 1330000, "1.34M" 1340000, "1.35M" 1350000, "1.36M" 1360000, "1.37M" 1370000, "1.38M" 1380000, "1.39M" 1390000)
set ytics ("175" 175, "180" 180, "185" 185, "190" 190, "195" 195, "200" 200, "205" 205)
set xlabel 'training tokens/s (over each training run)'
set ylabel 'test perplexity'
set xrange [1.29331e+06:1.39043e+06]
set yrange [170.759:206.69]
plot $points using 2:(column(5) == 0 ? column(3) : NaN) with points pt 7 ps 1.3 lc 1 title 'tensorized-causal', $points using 2:3:(column(7) > 0 ? stringcolumn(4) : '') with labels offset 0,0.9 font ',8' notitle, $front_tps using 1:2 with steps lw 2 lc rgb 'gray50' title 'Pareto front'
unset multiplot
set terminal svg size 1400,560
set output '/tmp/parts22b/Bc16/wt2/sweep.svg'
set multiplot layout 1,2
set xtics ("12.3M" 12300000, "12.4M" 12400000, "12.5M" 12500000, "12.6M" 12600000, "12.7M" 12700000, "12.8M" 12800000, "12.9M" 12900000)
set ytics ("175" 175, "180" 180, "185" 185, "190" 190, "195" 195, "200" 200, "205" 205)
set xlabel 'parameters'
set ylabel 'test perplexity'
set xrange [1.22442e+07:1.299e+07]
set yrange [170.759:206.69]
plot $points using 1:(column(5) == 0 ? column(3) : NaN) with points pt 7 ps 1.3 lc 1 title 'tensorized-causal', $points using 1:3:(column(6) > 0 ? stringcolumn(4) : '') with labels offset 0,0.9 font ',8' notitle, $front_params using 1:2 with steps lw 2 lc rgb 'gray50' title 'Pareto front'
set xtics ("1.3M" 1300000, "1.31M" 1310000, "1.32M" 1320000, "1.33M" 1330000, "1.34M" 1340000, "1.35M" 1350000, "1.36M" 1360000, "1.37M" 1370000, "1.38M" 1380000, "1.39M" 1390000)
set ytics ("175" 175, "180" 180, "185" 185, "190" 190, "195" 195, "200" 200, "205" 205)
set xlabel 'training tokens/s (over each training run)'
set ylabel 'test perplexity'
set xrange [1.29331e+06:1.39043e+06]
set yrange [170.759:206.69]
plot $points using 2:(column(5) == 0 ? column(3) : NaN) with points pt 7 ps 1.3 lc 1 title 'tensorized-causal', $points using 2:3:(column(7) > 0 ? stringcolumn(4) : '') with labels offset 0,0.9 font ',8' notitle, $front_tps using 1:2 with steps lw 2 lc rgb 'gray50' title 'Pareto front'
unset multiplot
