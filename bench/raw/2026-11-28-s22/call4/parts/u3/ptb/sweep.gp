$points << EOD
6887468 1432132.8759593794 40.436044416904217 "R128 c1 u" 1 1 1
6887852 1398412.931936268 40.00440660771028 "R128 c2 u" 1 1 1
6888620 1404280.9029442542 40.950141821765378 "R128 c4 u" 1 0 0
EOD
$paper << EOD
12000000 57.899999999999999 "paper core-1"
12000000 49.799999999999997 "paper core-2"
EOD
$front_params << EOD
6887468 40.436044416904217
6887852 40.00440660771028
EOD
$front_tps << EOD
1432132.8759593794 40.436044416904217
1398412.931936268 40.00440660771028
EOD
set grid
set logscale x
set logscale y
set key outside below horizontal font ',9'
set format x '%.3s%c'
set format y '%.4g'
set terminal pngcairo size 1400,560
set output '/tmp/parts22d/u3/ptb/sweep.png'
set multiplot layout 1,2
set xtics ("7M" 7000000, "8M" 8000000, "9M" 9000000, "10M" 10000000, "11M" 11000000, "12M" 12000000)
set ytics ("40" 40, "45" 45, "50" 50, "55" 55, "60" 60)
set xlabel 'parameters'
set ylabel 'test perplexity'
set xrange [6.50379e+06:1.27079e+07]
set yrange [36.3627:63.6987]
plot $points using 1:(column(5) == 1 ? column(3) : NaN) with points pt 7 ps 1.3 lc 2 title 'tensorized-unmasked', $points using 1:3:(column(6) > 0 ? stringcolumn(4) : '') with labels offset 0,0.9 font ',8' notitle, $front_params using 1:2 with steps lw 2 lc rgb 'gray50' title 'Pareto front', $paper using 1:2 with points pt 6 ps 2 lc rgb 'black' title 'the paper (unmasked)', '' every ::0::0 using 1:2:3 with labels offset 0,1.2 font ',8' notitle, '' every ::1::1 using 1:2:3 with labels offset 0,-1.2 font ',8' notitle
set xtics ("1.36M" 1360000, "1.38M" 1380000, "1.4M" 1400000, "1.42M" 1420000, "1.44M" 1440000, "1.46M" 1460000)
set ytics ("40" 40, "45" 45, "50" 50, "55" 55, "60" 60)
set xlabel 'training tokens/s (over each training run)'
set ylabel 'test perplexity'
set xrange [1.35607e+06:1.47686e+06]
set yrange [36.3627:63.6987]
plot $points using 2:(column(5) == 1 ? column(3) : NaN) with points pt 7 ps 1.3 lc 2 title 'tensorized-unmasked', $points using 2:3:(column(7) > 0 ? stringcolumn(4) : '') with labels offset 0,0.9 font ',8' notitle, $front_tps using 1:2 with steps lw 2 lc rgb 'gray50' title 'Pareto front'
unset multiplot
set terminal svg size 1400,560
set output '/tmp/parts22d/u3/ptb/sweep.svg'
set multiplot layout 1,2
set xtics ("7M" 7000000, "8M" 8000000, "9M" 9000000, "10M" 10000000, "11M" 11000000, "12M" 12000000)
set ytics ("40" 40, "45" 45, "50" 50, "55" 55, "60" 60)
set xlabel 'parameters'
set ylabel 'test perplexity'
set xrange [6.50379e+06:1.27079e+07]
set yrange [36.3627:63.6987]
plot $points using 1:(column(5) == 1 ? column(3) : NaN) with points pt 7 ps 1.3 lc 2 title 'tensorized-unmasked', $points using 1:3:(column(6) > 0 ? stringcolumn(4) : '') with labels offset 0,0.9 font ',8' notitle, $front_params using 1:2 with steps lw 2 lc rgb 'gray50' title 'Pareto front', $paper using 1:2 with points pt 6 ps 2 lc rgb 'black' title 'the paper (unmasked)', '' every ::0::0 using 1:2:3 with labels offset 0,1.2 font ',8' notitle, '' every ::1::1 using 1:2:3 with labels offset 0,-1.2 font ',8' notitle
set xtics ("1.36M" 1360000, "1.38M" 1380000, "1.4M" 1400000, "1.42M" 1420000, "1.44M" 1440000, "1.46M" 1460000)
set ytics ("40" 40, "45" 45, "50" 50, "55" 55, "60" 60)
set xlabel 'training tokens/s (over each training run)'
set ylabel 'test perplexity'
set xrange [1.35607e+06:1.47686e+06]
set yrange [36.3627:63.6987]
plot $points using 2:(column(5) == 1 ? column(3) : NaN) with points pt 7 ps 1.3 lc 2 title 'tensorized-unmasked', $points using 2:3:(column(7) > 0 ? stringcolumn(4) : '') with labels offset 0,0.9 font ',8' notitle, $front_tps using 1:2 with steps lw 2 lc rgb 'gray50' title 'Pareto front'
unset multiplot
