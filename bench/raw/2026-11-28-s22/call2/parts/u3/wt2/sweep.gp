$points << EOD
12869914 1105559.8516751474 51.830380901674012 "R128 c1 u" 1 1 1
12870298 1082131.9312795603 59.11474718924557 "R128 c2 u" 1 0 0
12871066 1078795.6034983755 59.853905342144465 "R128 c4 u" 1 0 0
EOD
$front_params << EOD
12869914 51.830380901674012
EOD
$front_tps << EOD
1105559.8516751474 51.830380901674012
EOD
set grid
set logscale x
set logscale y
set key outside below horizontal font ',9'
set format x '%.3s%c'
set format y '%.4g'
set terminal pngcairo size 1400,560
set output '/tmp/parts22/u3/wt2/sweep.png'
set multiplot layout 1,2
set xtics ("12.5M" 12500000, "12.6M" 12600000, "12.7M" 12700000, "12.8M" 12800000, "12.9M" 12900000, "13M" 13000000, "13.1M" 13100000, "13.2M" 13200000)
set ytics ("48" 48, "50" 50, "52" 52, "54" 54, "56" 56, "58" 58, "60" 60, "62" 62, "64" 64)
set xlabel 'parameters'
set ylabel 'test perplexity'
set xrange [1.2495e+07:1.32573e+07]
set yrange [47.647:65.1091]
plot $points using 1:(column(5) == 1 ? column(3) : NaN) with points pt 7 ps 1.3 lc 2 title 'tensorized-unmasked', $points using 1:3:(column(6) > 0 ? stringcolumn(4) : '') with labels offset 0,0.9 font ',8' notitle, $front_params using 1:2 with steps lw 2 lc rgb 'gray50' title 'Pareto front'
set xtics ("1.05M" 1050000, "1.06M" 1060000, "1.07M" 1070000, "1.08M" 1080000, "1.09M" 1090000, "1.1M" 1100000, "1.11M" 1110000, "1.12M" 1120000, "1.13M" 1130000, "1.14M" 1140000)
set ytics ("48" 48, "50" 50, "52" 52, "54" 54, "56" 56, "58" 58, "60" 60, "62" 62, "64" 64)
set xlabel 'training tokens/s (over each training run)'
set ylabel 'test perplexity'
set xrange [1.04609e+06:1.14012e+06]
set yrange [47.647:65.1091]
plot $points using 2:(column(5) == 1 ? column(3) : NaN) with points pt 7 ps 1.3 lc 2 title 'tensorized-unmasked', $points using 2:3:(column(7) > 0 ? stringcolumn(4) : '') with labels offset 0,0.9 font ',8' notitle, $front_tps using 1:2 with steps lw 2 lc rgb 'gray50' title 'Pareto front'
unset multiplot
set terminal svg size 1400,560
set output '/tmp/parts22/u3/wt2/sweep.svg'
set multiplot layout 1,2
set xtics ("12.5M" 12500000, "12.6M" 12600000, "12.7M" 12700000, "12.8M" 12800000, "12.9M" 12900000, "13M" 13000000, "13.1M" 13100000, "13.2M" 13200000)
set ytics ("48" 48, "50" 50, "52" 52, "54" 54, "56" 56, "58" 58, "60" 60, "62" 62, "64" 64)
set xlabel 'parameters'
set ylabel 'test perplexity'
set xrange [1.2495e+07:1.32573e+07]
set yrange [47.647:65.1091]
plot $points using 1:(column(5) == 1 ? column(3) : NaN) with points pt 7 ps 1.3 lc 2 title 'tensorized-unmasked', $points using 1:3:(column(6) > 0 ? stringcolumn(4) : '') with labels offset 0,0.9 font ',8' notitle, $front_params using 1:2 with steps lw 2 lc rgb 'gray50' title 'Pareto front'
set xtics ("1.05M" 1050000, "1.06M" 1060000, "1.07M" 1070000, "1.08M" 1080000, "1.09M" 1090000, "1.1M" 1100000, "1.11M" 1110000, "1.12M" 1120000, "1.13M" 1130000, "1.14M" 1140000)
set ytics ("48" 48, "50" 50, "52" 52, "54" 54, "56" 56, "58" 58, "60" 60, "62" 62, "64" 64)
set xlabel 'training tokens/s (over each training run)'
set ylabel 'test perplexity'
set xrange [1.04609e+06:1.14012e+06]
set yrange [47.647:65.1091]
plot $points using 2:(column(5) == 1 ? column(3) : NaN) with points pt 7 ps 1.3 lc 2 title 'tensorized-unmasked', $points using 2:3:(column(7) > 0 ? stringcolumn(4) : '') with labels offset 0,0.9 font ',8' notitle, $front_tps using 1:2 with steps lw 2 lc rgb 'gray50' title 'Pareto front'
unset multiplot
