$points << EOD
12593074 1302860.407324855 125.90937467863434 "R8 c1 u" 1 1 1
EOD
$front_params << EOD
12593074 125.90937467863434
EOD
$front_tps << EOD
1302860.407324855 125.90937467863434
EOD
set grid
set logscale x
set logscale y
set key outside below horizontal font ',9'
set format x '%.3s%c'
set format y '%.4g'
set terminal pngcairo size 1400,560
set output '/tmp/parts22b/us/wt2/sweep.png'
set multiplot layout 1,2
set xtics ("12.3M" 12300000, "12.4M" 12400000, "12.5M" 12500000, "12.6M" 12600000, "12.7M" 12700000, "12.8M" 12800000, "12.9M" 12900000)
set ytics ("118" 118, "120" 120, "122" 122, "124" 124, "126" 126, "128" 128, "130" 130, "132" 132, "134" 134)
set xlabel 'parameters'
set ylabel 'test perplexity'
set xrange [1.22263e+07:1.29709e+07]
set yrange [116.583:135.982]
plot $points using 1:(column(5) == 1 ? column(3) : NaN) with points pt 7 ps 1.3 lc 2 title 'tensorized-unmasked', $points using 1:3:(column(6) > 0 ? stringcolumn(4) : '') with labels offset 0,0.9 font ',8' notitle, $front_params using 1:2 with steps lw 2 lc rgb 'gray50' title 'Pareto front'
set xtics ("1.27M" 1270000, "1.28M" 1280000, "1.29M" 1290000, "1.3M" 1300000, "1.31M" 1310000, "1.32M" 1320000, "1.33M" 1330000, "1.34M" 1340000)
set ytics ("118" 118, "120" 120, "122" 122, "124" 124, "126" 126, "128" 128, "130" 130, "132" 132, "134" 134)
set xlabel 'training tokens/s (over each training run)'
set ylabel 'test perplexity'
set xrange [1.26491e+06:1.34195e+06]
set yrange [116.583:135.982]
plot $points using 2:(column(5) == 1 ? column(3) : NaN) with points pt 7 ps 1.3 lc 2 title 'tensorized-unmasked', $points using 2:3:(column(7) > 0 ? stringcolumn(4) : '') with labels offset 0,0.9 font ',8' notitle, $front_tps using 1:2 with steps lw 2 lc rgb 'gray50' title 'Pareto front'
unset multiplot
set terminal svg size 1400,560
set output '/tmp/parts22b/us/wt2/sweep.svg'
set multiplot layout 1,2
set xtics ("12.3M" 12300000, "12.4M" 12400000, "12.5M" 12500000, "12.6M" 12600000, "12.7M" 12700000, "12.8M" 12800000, "12.9M" 12900000)
set ytics ("118" 118, "120" 120, "122" 122, "124" 124, "126" 126, "128" 128, "130" 130, "132" 132, "134" 134)
set xlabel 'parameters'
set ylabel 'test perplexity'
set xrange [1.22263e+07:1.29709e+07]
set yrange [116.583:135.982]
plot $points using 1:(column(5) == 1 ? column(3) : NaN) with points pt 7 ps 1.3 lc 2 title 'tensorized-unmasked', $points using 1:3:(column(6) > 0 ? stringcolumn(4) : '') with labels offset 0,0.9 font ',8' notitle, $front_params using 1:2 with steps lw 2 lc rgb 'gray50' title 'Pareto front'
set xtics ("1.27M" 1270000, "1.28M" 1280000, "1.29M" 1290000, "1.3M" 1300000, "1.31M" 1310000, "1.32M" 1320000, "1.33M" 1330000, "1.34M" 1340000)
set ytics ("118" 118, "120" 120, "122" 122, "124" 124, "126" 126, "128" 128, "130" 130, "132" 132, "134" 134)
set xlabel 'training tokens/s (over each training run)'
set ylabel 'test perplexity'
set xrange [1.26491e+06:1.34195e+06]
set yrange [116.583:135.982]
plot $points using 2:(column(5) == 1 ? column(3) : NaN) with points pt 7 ps 1.3 lc 2 title 'tensorized-unmasked', $points using 2:3:(column(7) > 0 ? stringcolumn(4) : '') with labels offset 0,0.9 font ',8' notitle, $front_tps using 1:2 with steps lw 2 lc rgb 'gray50' title 'Pareto front'
unset multiplot
