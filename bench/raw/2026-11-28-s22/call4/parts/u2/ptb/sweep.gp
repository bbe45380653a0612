$points << EOD
6739820 1780094.3281550291 43.875870695912603 "R64 c1 u" 1 1 1
6740012 1745973.2075240719 46.455239825077214 "R64 c2 u" 1 0 0
6740396 1749386.9069894168 42.404813023351267 "R64 c4 u" 1 1 1
EOD
$paper << EOD
12000000 57.899999999999999 "paper core-1"
12000000 49.799999999999997 "paper core-2"
EOD
$front_params << EOD
6739820 43.875870695912603
6740396 42.404813023351267
EOD
$front_tps << EOD
1780094.3281550291 43.875870695912603
1749386.9069894168 42.404813023351267
EOD
set grid
set logscale x
set logscale y
set key outside below horizontal font ',9'
set format x '%.3s%c'
set format y '%.4g'
set terminal pngcairo size 1400,560
set output '/tmp/parts22d/u2/ptb/sweep.png'
set multiplot layout 1,2
set xtics ("7M" 7000000, "8M" 8000000, "9M" 9000000, "10M" 10000000, "11M" 11000000, "12M" 12000000)
set ytics ("40" 40, "42" 42, "44" 44, "46" 46, "48" 48, "50" 50, "52" 52, "54" 54, "56" 56, "58" 58, "60" 60, "62" 62)
set xlabel 'parameters'
set ylabel 'test perplexity'
set xrange [6.35747e+06:1.27217e+07]
set yrange [38.657:63.5134]
plot $points using 1:(column(5) == 1 ? column(3) : NaN) with points pt 7 ps 1.3 lc 2 title 'tensorized-unmasked', $points using 1:3:(column(6) > 0 ? stringcolumn(4) : '') with labels offset 0,0.9 font ',8' notitle, $front_params using 1:2 with steps lw 2 lc rgb 'gray50' title 'Pareto front', $paper using 1:2 with points pt 6 ps 2 lc rgb 'black' title 'the paper (unmasked)', '' every ::0::0 using 1:2:3 with labels offset 0,1.2 font ',8' notitle, '' every ::1::1 using 1:2:3 with labels offset 0,-1.2 font ',8' notitle
set xtics ("1.7M" 1700000, "1.72M" 1720000, "1.74M" 1740000, "1.76M" 1760000, "1.78M" 1780000, "1.8M" 1800000, "1.82M" 1820000)
set ytics ("40" 40, "42" 42, "44" 44, "46" 46, "48" 48, "50" 50, "52" 52, "54" 54, "56" 56, "58" 58, "60" 60, "62" 62)
set xlabel 'training tokens/s (over each training run)'
set ylabel 'test perplexity'
set xrange [1.69348e+06:1.83527e+06]
set yrange [38.657:63.5134]
plot $points using 2:(column(5) == 1 ? column(3) : NaN) with points pt 7 ps 1.3 lc 2 title 'tensorized-unmasked', $points using 2:3:(column(7) > 0 ? stringcolumn(4) : '') with labels offset 0,0.9 font ',8' notitle, $front_tps using 1:2 with steps lw 2 lc rgb 'gray50' title 'Pareto front'
unset multiplot
set terminal svg size 1400,560
set output '/tmp/parts22d/u2/ptb/sweep.svg'
set multiplot layout 1,2
set xtics ("7M" 7000000, "8M" 8000000, "9M" 9000000, "10M" 10000000, "11M" 11000000, "12M" 12000000)
set ytics ("40" 40, "42" 42, "44" 44, "46" 46, "48" 48, "50" 50, "52" 52, "54" 54, "56" 56, "58" 58, "60" 60, "62" 62)
set xlabel 'parameters'
set ylabel 'test perplexity'
set xrange [6.35747e+06:1.27217e+07]
set yrange [38.657:63.5134]
plot $points using 1:(column(5) == 1 ? column(3) : NaN) with points pt 7 ps 1.3 lc 2 title 'tensorized-unmasked', $points using 1:3:(column(6) > 0 ? stringcolumn(4) : '') with labels offset 0,0.9 font ',8' notitle, $front_params using 1:2 with steps lw 2 lc rgb 'gray50' title 'Pareto front', $paper using 1:2 with points pt 6 ps 2 lc rgb 'black' title 'the paper (unmasked)', '' every ::0::0 using 1:2:3 with labels offset 0,1.2 font ',8' notitle, '' every ::1::1 using 1:2:3 with labels offset 0,-1.2 font ',8' notitle
set xtics ("1.7M" 1700000, "1.72M" 1720000, "1.74M" 1740000, "1.76M" 1760000, "1.78M" 1780000, "1.8M" 1800000, "1.82M" 1820000)
set ytics ("40" 40, "42" 42, "44" 44, "46" 46, "48" 48, "50" 50, "52" 52, "54" 54, "56" 56, "58" 58, "60" 60, "62" 62)
set xlabel 'training tokens/s (over each training run)'
set ylabel 'test perplexity'
set xrange [1.69348e+06:1.83527e+06]
set yrange [38.657:63.5134]
plot $points using 2:(column(5) == 1 ? column(3) : NaN) with points pt 7 ps 1.3 lc 2 title 'tensorized-unmasked', $points using 2:3:(column(7) > 0 ? stringcolumn(4) : '') with labels offset 0,0.9 font ',8' notitle, $front_tps using 1:2 with steps lw 2 lc rgb 'gray50' title 'Pareto front'
unset multiplot
