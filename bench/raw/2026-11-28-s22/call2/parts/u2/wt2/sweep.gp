$points << EOD
12722266 1312688.1616677158 58.266369526672882 "R64 c1 u" 1 1 1
12722458 1289460.5290532624 55.605580771530029 "R64 c2 u" 1 1 1
12722842 1282535.339238154 51.316166319696457 "R64 c4 u" 1 1 1
EOD
$front_params << EOD
12722266 58.266369526672882
12722458 55.605580771530029
12722842 51.316166319696457
EOD
$front_tps << EOD
1312688.1616677158 58.266369526672882
1289460.5290532624 55.605580771530029
1282535.339238154 51.316166319696457
EOD
set grid
set logscale x
set logscale y
set key outside below horizontal font ',9'
set format x '%.3s%c'
set format y '%.4g'
set terminal pngcairo size 1400,560
set output '/tmp/parts22/u2/wt2/sweep.png'
set multiplot layout 1,2
set xtics ("12.4M" 12400000, "12.5M" 12500000, "12.6M" 12600000, "12.7M" 12700000, "12.8M" 12800000, "12.9M" 12900000, "13M" 13000000, "13.1M" 13100000)
set ytics ("48" 48, "50" 50, "52" 52, "54" 54, "56" 56, "58" 58, "60" 60, "62" 62)
set xlabel 'parameters'
set ylabel 'test perplexity'
set xrange [1.23517e+07:1.31046e+07]
set yrange [47.2142:63.3286]
plot $points using 1:(column(5) == 1 ? column(3) : NaN) with points pt 7 ps 1.3 lc 2 title 'tensorized-unmasked', $points using 1:3:(column(6) > 0 ? stringcolumn(4) : '') with labels offset 0,0.9 font ',8' notitle, $front_params using 1:2 with steps lw 2 lc rgb 'gray50' title 'Pareto front'
set xtics ("1.26M" 1260000, "1.28M" 1280000, "1.3M" 1300000, "1.32M" 1320000, "1.34M" 1340000)
set ytics ("48" 48, "50" 50, "52" 52, "54" 54, "56" 56, "58" 58, "60" 60, "62" 62)
set xlabel 'training tokens/s (over each training run)'
set ylabel 'test perplexity'
set xrange [1.24373e+06:1.35364e+06]
set yrange [47.2142:63.3286]
plot $points using 2:(column(5) == 1 ? column(3) : NaN) with points pt 7 ps 1.3 lc 2 title 'tensorized-unmasked', $points using 2:3:(column(7) > 0 ? stringcolumn(4) : '') with labels offset 0,0.9 font ',8' notitle, $front_tps using 1:2 with steps lw 2 lc rgb 'gray50' title 'Pareto front'
unset multiplot
set terminal svg size 1400,560
set output '/tmp/parts22/u2/wt2/sweep.svg'
set multiplot layout 1,2
set xtics ("12.4M" 12400000, "12.5M" 12500000, "12.6M" 12600000, "12.7M" 12700000, "12.8M" 12800000, "12.9M" 12900000, "13M" 13000000, "13.1M" 13100000)
set ytics ("48" 48, "50" 50, "52" 52, "54" 54, "56" 56, "58" 58, "60" 60, "62" 62)
set xlabel 'parameters'
set ylabel 'test perplexity'
set xrange [1.23517e+07:1.31046e+07]
set yrange [47.2142:63.3286]
plot $points using 1:(column(5) == 1 ? column(3) : NaN) with points pt 7 ps 1.3 lc 2 title 'tensorized-unmasked', $points using 1:3:(column(6) > 0 ? stringcolumn(4) : '') with labels offset 0,0.9 font ',8' notitle, $front_params using 1:2 with steps lw 2 lc rgb 'gray50' title 'Pareto front'
set xtics ("1.26M" 1260000, "1.28M" 1280000, "1.3M" 1300000, "1.32M" 1320000, "1.34M" 1340000)
set ytics ("48" 48, "50" 50, "52" 52, "54" 54, "56" 56, "58" 58, "60" 60, "62" 62)
set xlabel 'training tokens/s (over each training run)'
set ylabel 'test perplexity'
set xrange [1.24373e+06:1.35364e+06]
set yrange [47.2142:63.3286]
plot $points using 2:(column(5) == 1 ? column(3) : NaN) with points pt 7 ps 1.3 lc 2 title 'tensorized-unmasked', $points using 2:3:(column(7) > 0 ? stringcolumn(4) : '') with labels offset 0,0.9 font ',8' notitle, $front_tps using 1:2 with steps lw 2 lc rgb 'gray50' title 'Pareto front'
unset multiplot
