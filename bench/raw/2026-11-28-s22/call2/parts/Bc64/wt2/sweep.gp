$points << EOD
12722266 1286360 177.901802 "R64 c1" 0 1 1
12722458 1285570 177.595429 "R64 c2" 0 1 1
12722842 1282430 184.96139700000001 "R64 c4" 0 0 0
EOD
$front_params << EOD
12722266 177.901802
12722458 177.595429
EOD
$front_tps << EOD
1286360 177.901802
1285570 177.595429
EOD
set grid
set logscale x
set logscale y
set key outside below horizontal font ',9'
set format x '%.3s%c'
set format y '%.4g'
set terminal pngcairo size 1400,560
set output '/tmp/parts22b/Bc64/wt2/sweep.png'
set multiplot layout 1,2
set xtics ("12.4M" 12400000, "12.5M" 12500000, "12.6M" 12600000, "12.7M" 12700000, "12.8M" 12800000, "12.9M" 12900000, "13M" 13000000, "13.1M" 13100000)
set ytics ("165" 165, "170" 170, "175" 175, "180" 180, "185" 185, "190" 190, "195" 195, "200" 200)
set xlabel 'parameters'
set ylabel 'test perplexity'
set xrange [1.23517e+07:1.31046e+07]
set yrange [164.106:200.165]
plot $points using 1:(column(5) == 0 ? column(3) : NaN) with points pt 7 ps 1.3 lc 1 title 'tensorized-causal', $points using 1:3:(column(6) > 0 ? stringcolumn(4) : '') with labels offset 0,0.9 font ',8' notitle, $front_params using 1:2 with steps lw 2 lc rgb 'gray50' title 'Pareto front'
set xtics ("1.25M" 1250000, "1.26M" 1260000, "1.27M" 1270000, "1.28M" 1280000, "1.29M" 1290000, "1.3M" 1300000, "1.31M" 1310000, "1.32M" 1320000)
set ytics ("165" 165, "170" 170, "175" 175, "180" 180, "185" 185, "190" 190, "195" 195, "200" 200)
set xlabel 'training tokens/s (over each training run)'
set ylabel 'test perplexity'
set xrange [1.24489e+06:1.32515e+06]
set yrange [164.106:200.165]
plot $points using 2:(column(5) == 0 ? column(3) : NaN) with points pt 7 ps 1.3 lc 1 title 'tensorized-causal', $points using 2:3:(column(7) > 0 ? stringcolumn(4) : '') with labels offset 0,0.9 font ',8' notitle, $front_tps using 1:2 with steps lw 2 lc rgb 'gray50' title 'Pareto front'
unset multiplot
set terminal svg size 1400,560
set output '/tmp/parts22b/Bc64/wt2/sweep.svg'
set multiplot layout 1,2
set xtics ("12.4M" 12400000, "12.5M" 12500000, "12.6M" 12600000, "12.7M" 12700000, "12.8M" 12800000, "12.9M" 12900000, "13M" 13000000, "13.1M" 13100000)
set ytics ("165" 165, "170" 170, "175" 175, "180" 180, "185" 185, "190" 190, "195" 195, "200" 200)
set xlabel 'parameters'
set ylabel 'test perplexity'
set xrange [1.23517e+07:1.31046e+07]
set yrange [164.106:200.165]
plot $points using 1:(column(5) == 0 ? column(3) : NaN) with points pt 7 ps 1.3 lc 1 title 'tensorized-causal', $points using 1:3:(column(6) > 0 ? stringcolumn(4) : '') with labels offset 0,0.9 font ',8' notitle, $front_params using 1:2 with steps lw 2 lc rgb 'gray50' title 'Pareto front'
set xtics ("1.25M" 1250000, "1.26M" 1260000, "1.27M" 1270000, "1.28M" 1280000, "1.29M" 1290000, "1.3M" 1300000, "1.31M" 1310000, "1.32M" 1320000)
set ytics ("165" 165, "170" 170, "175" 175, "180" 180, "185" 185, "190" 190, "195" 195, "200" 200)
set xlabel 'training tokens/s (over each training run)'
set ylabel 'test perplexity'
set xrange [1.24489e+06:1.32515e+06]
set yrange [164.106:200.165]
plot $points using 2:(column(5) == 0 ? column(3) : NaN) with points pt 7 ps 1.3 lc 1 title 'tensorized-causal', $points using 2:3:(column(7) > 0 ? stringcolumn(4) : '') with labels offset 0,0.9 font ',8' notitle, $front_tps using 1:2 with steps lw 2 lc rgb 'gray50' title 'Pareto front'
unset multiplot
