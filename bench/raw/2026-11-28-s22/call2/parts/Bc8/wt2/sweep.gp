$points << EOD
12593098 1311330 197.59083899999999 "R8 c2" 0 1 1
12593146 1296310 187.32331600000001 "R8 c4" 0 1 1
EOD
$front_params << EOD
12593098 197.59083899999999
12593146 187.32331600000001
EOD
$front_tps << EOD
1311330 197.59083899999999
1296310 187.32331600000001
EOD
set grid
set logscale x
set logscale y
set key outside below horizontal font ',9'
set format x '%.3s%c'
set format y '%.4g'
set terminal pngcairo size 1400,560
set output '/tmp/parts22b/Bc8/wt2/sweep.png'
set multiplot layout 1,2
set xtics ("12.3M" 12300000, "12.4M" 12400000, "12.5M" 12500000, "12.6M" 12600000, "12.7M" 12700000, "12.8M" 12800000, "12.9M" 12900000)
set ytics ("175" 175, "180" 180, "185" 185, "190" 190, "195" 195, "200" 200, "205" 205, "210" 210)
set xlabel 'parameters'
set ylabel 'test perplexity'
set xrange [1.22263e+07:1.29709e+07]
set yrange [172.985:213.968]
plot $points using 1:(column(5) == 0 ? column(3) : NaN) with points pt 7 ps 1.3 lc 1 title 'tensorized-causal', $points using 1:3:(column(6) > 0 ? stringcolumn(4) : '') with labels offset 0,0.9 font ',8' notitle, $front_params using 1:2 with steps lw 2 lc rgb 'gray50' title 'Pareto front'
set xtics ("1.26M" 1260000, "1.27M" 1270000, "1.28M" 1280000, "1.29M" 1290000, "1.3M" 1300000, "1.31M" 1310000, "1.32M" 1320000, "1.33M" 1330000, "1.34M" 1340000, "1.35M" 1350000)
set ytics ("175" 175, "180" 180, "185" 185, "190" 190, "195" 195, "200" 200, "205" 205, "210" 210)
set xlabel 'training tokens/s (over each training run)'
set ylabel 'test perplexity'
set xrange [1.25783e+06:1.35145e+06]
set yrange [172.985:213.968]
plot $points using 2:(column(5) == 0 ? column(3) : NaN) with points pt 7 ps 1.3 lc 1 title 'tensorized-causal', $points using 2:3:(column(7) > 0 ? stringcolumn(4) : '') with labels offset 0,0.9 font ',8' notitle, $front_tps using 1:2 with steps lw 2 lc rgb 'gray50' title 'Pareto front'
unset multiplot
set terminal svg size 1400,560
set output '/tmp/parts22b/Bc8/wt2/sweep.svg'
set multiplot layout 1,2
set xtics ("12.3M" 12300000, "12.4M" 12400000, "12.5M" 12500000, "12.6M" 12600000, "12.7M" 12700000, "12.8M" 12800000, "12.9M" 12900000)
set ytics ("175" 175, "180" 180, "185" 185, "190" 190, "195" 195, "200" 200, "205" 205, "210" 210)
set xlabel 'parameters'
set ylabel 'test perplexity'
set xrange [1.22263e+07:1.29709e+07]
set yrange [172.985:213.968]
plot $points using 1:(column(5) == 0 ? column(3) : NaN) with points pt 7 ps 1.3 lc 1 title 'tensorized-causal', $points using 1:3:(column(6) > 0 ? stringcolumn(4) : '') with labels offset 0,0.9 font ',8' notitle, $front_params using 1:2 with steps lw 2 lc rgb 'gray50' title 'Pareto front'
set xtics ("1.26M" 1260000, "1.27M" 1270000, "1.28M" 1280000, "1.29M" 1290000, "1.3M" 1300000, "1.31M" 1310000, "1.32M" 1320000, "1.33M" 1330000, "1.34M" 1340000, "1.35M" 1350000)
set ytics ("175" 175, "180" 180, "185" 185, "190" 190, "195" 195, "200" 200, "205" 205, "210" 210)
set xlabel 'training tokens/s (over each training run)'
set ylabel 'test perplexity'
set xrange [1.25783e+06:1.35145e+06]
set yrange [172.985:213.968]
plot $points using 2:(column(5) == 0 ? column(3) : NaN) with points pt 7 ps 1.3 lc 1 title 'tensorized-causal', $points using 2:3:(column(7) > 0 ? stringcolumn(4) : '') with labels offset 0,0.9 font ',8' notitle, $front_tps using 1:2 with steps lw 2 lc rgb 'gray50' title 'Pareto front'
unset multiplot
