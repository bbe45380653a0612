$points << EOD
12593074 1269255.8025337376 190.88288101294907 "R8 c1" 0 1 0
12593098 1311327.0527250792 197.59083860098045 "R8 c2" 0 0 0
12593146 1296311.3617019719 187.32331561339549 "R8 c4" 0 1 0
12611530 1332914.7475345214 191.05792586049913 "R16 c1" 0 0 0
12611578 1335613.0259048138 184.7305963499839 "R16 c2" 0 1 1
12611674 1349117.0764077997 189.99832794051079 "R16 c4" 0 0 1
12666898 1288560.1917767427 180.68804314299922 "R40 c1" 0 1 0
12667018 1306707.8035740012 180.42589168518023 "R40 c2" 0 1 1
12667258 1305342.6168106811 184.78221638042956 "R40 c4" 0 0 0
EOD
$front_params << EOD
12593074 190.88288101294907
12593146 187.32331561339549
12611578 184.7305963499839
12666898 180.68804314299922
12667018 180.42589168518023
EOD
$front_tps << EOD
1349117.0764077997 189.99832794051079
1335613.0259048138 184.7305963499839
1306707.8035740012 180.42589168518023
EOD
set grid
set logscale x
set logscale y
set key outside below horizontal font ',9'
set format x '%.3s%c'
set format y '%.4g'
set terminal pngcairo size 1400,560
set output '/tmp/parts22/c1/wt2/sweep.png'
set multiplot layout 1,2
set xtics ("12.3M" 12300000, "12.4M" 12400000, "12.5M" 12500000, "12.6M" 12600000, "12.7M" 12700000, "12.8M" 12800000, "12.9M" 12900000, "13M" 13000000)
set ytics ("170" 170, "175" 175, "180" 180, "185" 185, "190" 190, "195" 195, "200" 200, "205" 205, "210" 210)
set xlabel 'parameters'
set ylabel 'test perplexity'
set xrange [1.22227e+07:1.30511e+07]
set yrange [166.304:214.37]
plot $points using 1:(column(5) == 0 ? column(3) : NaN) with points pt 7 ps 1.3 lc 1 title 'tensorized-causal', $points using 1:3:(column(6) > 0 ? stringcolumn(4) : '') with labels offset 0,0.9 font ',8' notitle, $front_params using 1:2 with steps lw 2 lc rgb 'gray50' title 'Pareto front'
set xtics ("1.24M" 1240000, "1.26M" 1260000, "1.28M" 1280000, "1.3M" 1300000, "1.32M" 1320000, "1.34M" 1340000, "1.36M" 1360000, "1.38M" 1380000)
set ytics ("170" 170, "175" 175, "180" 180, "185" 185, "190" 190, "195" 195, "200" 200, "205" 205, "210" 210)
set xlabel 'training tokens/s (over each training run)'
set ylabel 'test perplexity'
set xrange [1.22853e+06:1.39384e+06]
set yrange [166.304:214.37]
plot $points using 2:(column(5) == 0 ? column(3) : NaN) with points pt 7 ps 1.3 lc 1 title 'tensorized-causal', $points using 2:3:(column(7) > 0 ? stringcolumn(4) : '') with labels offset 0,0.9 font ',8' notitle, $front_tps using 1:2 with steps lw 2 lc rgb 'gray50' title 'Pareto front'
unset multiplot
set terminal svg size 1400,560
set output '/tmp/parts22/c1/wt2/sweep.svg'
set multiplot layout 1,2
set xtics ("12.3M" 12300000, "12.4M" 12400000, "12.5M" 12500000, "12.6M" 12600000, "12.7M" 12700000, "12.8M" 12800000, "12.9M" 12900000, "13M" 13000000)
set ytics ("170" 170, "175" 175, "180" 180, "185" 185, "190" 190, "195" 195, "200" 200, "205" 205, "210" 210)
set xlabel 'parameters'
set ylabel 'test perplexity'
set xrange [1.22227e+07:1.30511e+07]
set yrange [166.304:214.37]
plot $points using 1:(column(5) == 0 ? column(3) : NaN) with points pt 7 ps 1.3 lc 1 title 'tensorized-causal', $points using 1:3:(column(6) > 0 ? stringcolumn(4) : '') with labels offset 0,0.9 font ',8' notitle, $front_params using 1:2 with steps lw 2 lc rgb 'gray50' title 'Pareto front'
set xtics ("1.24M" 1240000, "1.26M" 1260000, "1.28M" 1280000, "1.3M" 1300000, "1.32M" 1320000, "1.34M" 1340000, "1.36M" 1360000, "1.38M" 1380000)
set ytics ("170" 170, "175" 175, "180" 180, "185" 185, "190" 190, "195" 195, "200" 200, "205" 205, "210" 210)
set xlabel 'training tokens/s (over each training run)'
set ylabel 'test perplexity'
set xrange [1.22853e+06:1.39384e+06]
set yrange [166.304:214.37]
plot $points using 2:(column(5) == 0 ? column(3) : NaN) with points pt 7 ps 1.3 lc 1 title 'tensorized-causal', $points using 2:3:(column(7) > 0 ? stringcolumn(4) : '') with labels offset 0,0.9 font ',8' notitle, $front_tps using 1:2 with steps lw 2 lc rgb 'gray50' title 'Pareto front'
unset multiplot
